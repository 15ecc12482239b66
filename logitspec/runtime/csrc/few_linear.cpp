// y = x @ w.T (+ b) for a few rows of x, streaming w from memory once per FEW_MAX_ROWS rows.
//
// Tree verification multiplies every weight matrix by a handful of rows. The product is
// bound by reading the weights, but MKL's fp32 GEMM (packed or not) slows down past a few
// rows: the weights no longer stream at the memory's speed. This kernel walks the output
// features in ones, pairs or fours, prefetches the weight rows a few features ahead and
// keeps every row's partial sums in registers, so each weight is read once for all rows.
//
// Built at run time for the machine it runs on, in one of three variants chosen by the
// compiler flags (logitspec/runtime/fewrows.py picks them from the CPU's flags): AVX-512
// (16-float vectors, 32 registers), AVX2 + FMA (8-float vectors, 16 registers) or aarch64's
// NEON (4-float vectors, 32 registers). Each registers its own op, e.g.
// logitspec::few_linear_avx2, so two can be loaded in one process. The caller falls back to
// torch's own kernels where none can be built.
//
// Every output is summed in one fixed order whatever the number of rows: vector lane l
// adds the products at features l, l + lanes, ... in order, then the lanes are added in a
// fixed tree. A row's outputs are the same bits alone or beside other rows (per variant).
// bfloat16 and float16 weights are widened to float32 as they are loaded, so a half-precision
// model's products are float32 sums in that same order, rounded once: row-invariant too.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#if !defined(FEW_MAX_ROWS) || !defined(FEW_FEATURE_MULTIPLE)
#error "build through logitspec.fewrows, which defines FEW_MAX_ROWS and FEW_FEATURE_MULTIPLE"
#endif

namespace {

constexpr int kMaxRows = FEW_MAX_ROWS;
constexpr int64_t kStep = FEW_FEATURE_MULTIPLE;  // features per step: one 64-byte line of weights
constexpr int64_t kPrefetchRows = 4;  // weight rows fetched ahead of the ones in use
static_assert(kMaxRows >= 1 && kMaxRows <= 16, "the register layouts below are sized for 1 to 16 rows");

#if defined(__AVX512F__)
#define FEW_ISA "avx512"
struct Isa {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kRowsAtOnce = 16;  // 16 sums + 1 weight + 1 input fit 32 registers
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const at::BFloat16* p) {  // bf16 is the top half of a float32
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p)), 16));
  }
  static V load(const at::Half* p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p)); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
  static void prefetch(const void* p) { _mm_prefetch((const char*)p, _MM_HINT_T0); }
  // Four outputs at a time while the sums fit the 32 vector registers, then fewer.
  static constexpr int outputs_at_once(int m) { return m <= 4 ? 4 : m <= 12 ? 2 : 1; }
};
#elif defined(__AVX2__) && defined(__FMA__)
#define FEW_ISA "avx2"
struct Isa {
  using V = __m256;
  static constexpr int kLanes = 8;
  // 14 sums + 1 weight + 1 input fill the 16 registers; more rows go in two passes over
  // the same weight rows, the second read from the L1 cache.
  static constexpr int kRowsAtOnce = 14;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const at::BFloat16* p) {  // bf16 is the top half of a float32
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p)), 16));
  }
  static V load(const at::Half* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }  // F16C
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) {  // always the same tree: halves, then quarters, then the last pair
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static void prefetch(const void* p) { _mm_prefetch((const char*)p, _MM_HINT_T0); }
  // m * J sums + J weights + 1 input within 16 registers.
  static constexpr int outputs_at_once(int m) { return m <= 2 ? 4 : m <= 6 ? 2 : 1; }
};
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define FEW_ISA "neon"
struct Isa {
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static constexpr int kRowsAtOnce = 16;  // 32 registers, as AVX-512: 16 sums + 1 weight + 1 input
  static V zero() { return vdupq_n_f32(0.0f); }
  static V load(const float* p) { return vld1q_f32(p); }
  static V load(const at::BFloat16* p) {  // bf16 is the top half of a float32
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t*)p), 16));
  }
  static V load(const at::Half* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t*)p))); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static float sum(V v) {  // always the same tree: lanes (0 + 2) + (1 + 3)
    const float32x2_t s = vadd_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(vpadd_f32(s, s), 0);
  }
  static void prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }
  static constexpr int outputs_at_once(int m) { return m <= 4 ? 4 : m <= 12 ? 2 : 1; }
};
#else
#error "the few-row kernel needs AVX-512, AVX2 with FMA, or aarch64's NEON"
#endif

static_assert(kStep % Isa::kLanes == 0, "a step must hold whole vectors");

// y[r, o + j] = x[r] . row[j] + b[o + j] for rows r < M and outputs j < count, over all K.
template <int M, int J, bool Prefetch, typename W>
inline void dot_rows(const float* x, int64_t K, const W* const* row, int count, const float* b,
                     float* y, int64_t N, int64_t o) {
  typename Isa::V acc[J][M];
  for (int j = 0; j < J; j++)
    for (int r = 0; r < M; r++) acc[j][r] = Isa::zero();
  for (int64_t k = 0; k < K; k += kStep) {
    if constexpr (Prefetch)
      for (int j = 0; j < J; j++) Isa::prefetch(row[j] + kPrefetchRows * K + k);
    for (int h = 0; h < kStep; h += Isa::kLanes) {  // a constant count: unrolled
      typename Isa::V wv[J];
      for (int j = 0; j < J; j++) wv[j] = Isa::load(row[j] + k + h);
      for (int r = 0; r < M; r++) {
        const typename Isa::V xv = Isa::load(x + r * K + k + h);
        for (int j = 0; j < J; j++) acc[j][r] = Isa::fma(wv[j], xv, acc[j][r]);
      }
    }
  }
  for (int r = 0; r < M; r++)
    for (int j = 0; j < count; j++) y[r * N + o + j] = Isa::sum(acc[j][r]) + (b ? b[o + j] : 0.0f);
}

// Outputs [n0, n1) of y[M, N] = x[M, K] @ w[N, K].T + b, J outputs at a time.
template <int M, int J, typename W>
void block(const float* x, int64_t K, const W* w, int64_t N, const float* b, float* y,
           int64_t n0, int64_t n1) {
  for (int64_t o = n0; o < n1; o += J) {
    const int count = (n1 - o) < J ? int(n1 - o) : J;
    const W* row[J];
    for (int j = 0; j < J; j++) row[j] = w + (o + (j < count ? j : 0)) * K;
    if constexpr (M <= Isa::kRowsAtOnce) {
      dot_rows<M, J, true>(x, K, row, count, b, y, N, o);
    } else {  // two passes of about half the rows each; the split leaves every sum's order alone
      constexpr int kFirst = (M + 1) / 2;
      dot_rows<kFirst, J, true>(x, K, row, count, b, y, N, o);
      dot_rows<M - kFirst, J, false>(x + kFirst * K, K, row, count, b, y + kFirst * N, N, o);
    }
  }
}

template <typename W>
using Block = void (*)(const float*, int64_t, const W*, int64_t, const float*, float*, int64_t, int64_t);

template <typename W, int... Ms>
constexpr auto make_table(std::integer_sequence<int, Ms...>) {
  return std::array<Block<W>, sizeof...(Ms)>{block<Ms + 1, Isa::outputs_at_once(Ms + 1), W>...};
}
template <typename W>
constexpr auto kBlocks = make_table<W>(std::make_integer_sequence<int, kMaxRows>{});

// y[M, N] (float32) = x[M, K] @ w[N, K].T + b. Rows go in chunks of at most kMaxRows, each a
// pass over the weights; a row's sums are the same bits in any chunk, so any M is row-invariant.
template <typename W>
void run_rows(const float* xp, int64_t M, int64_t K, const W* wp, int64_t N, const float* b, float* yp) {
  // Threads split the output features in chunks of 4; each thread streams its own rows of w.
  at::parallel_for(0, (N + 3) / 4, 16, [&](int64_t s, int64_t e) {
    for (int64_t r0 = 0; r0 < M; r0 += kMaxRows) {
      const int64_t m = std::min<int64_t>(kMaxRows, M - r0);
      kBlocks<W>[m - 1](xp + r0 * K, K, wp, N, b, yp + r0 * N, s * 4, std::min(N, e * 4));
    }
  });
}

// float32, bfloat16 or float16: x, the weight and the bias share one dtype, the sums are float32
// and the output is rounded to the inputs' dtype once, at the end.
at::Tensor few_linear(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(x.device().is_cpu() && w.device().is_cpu(), "few_linear: CPU tensors only");
  const auto dtype = x.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
              "few_linear: float32, bfloat16 or float16 only");
  TORCH_CHECK(w.scalar_type() == dtype, "few_linear: the weight's dtype must be the input's");
  TORCH_CHECK(w.dim() == 2 && w.is_contiguous(), "few_linear: the weight must be a contiguous [out, in] matrix");
  const int64_t N = w.size(0), K = w.size(1);
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == K, "few_linear: input features do not match the weight");
  TORCH_CHECK(K % kStep == 0, "few_linear: input features must be a multiple of ", kStep);
  const at::Tensor x2 = x.reshape({-1, K}).to(at::kFloat).contiguous();  // exact: every half is a float
  const int64_t M = x2.size(0);
  TORCH_CHECK(M >= 1, "few_linear: at least one row");
  at::Tensor b32;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->scalar_type() == dtype && bias->numel() == N,
                "few_linear: the bias must be a vector of the output size, in the input's dtype");
    b32 = bias->to(at::kFloat).contiguous();
  }
  const float* b = b32.defined() ? b32.data_ptr<float>() : nullptr;
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = N;
  at::Tensor y = at::empty({M, N}, x2.options());
  const float* xp = x2.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  if (dtype == at::kFloat) {
    run_rows(xp, M, K, w.data_ptr<float>(), N, b, yp);
  } else if (dtype == at::kBFloat16) {
    run_rows(xp, M, K, w.data_ptr<at::BFloat16>(), N, b, yp);
  } else {
    run_rows(xp, M, K, w.data_ptr<at::Half>(), N, b, yp);
  }
  return y.to(dtype).view(shape);
}

}  // namespace

// A fragment, not TORCH_LIBRARY: the two variants may both be loaded into one process.
TORCH_LIBRARY_FRAGMENT(logitspec, m) { m.def("few_linear_" FEW_ISA "(Tensor x, Tensor w, Tensor? bias) -> Tensor"); }
TORCH_LIBRARY_IMPL(logitspec, CPU, m) { m.impl("few_linear_" FEW_ISA, few_linear); }
