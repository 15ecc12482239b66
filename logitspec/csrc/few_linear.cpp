// y = x @ w.T (+ b) for a few rows of x (1 to 16), streaming w from memory once.
//
// Tree verification multiplies every weight matrix by a handful of rows. The product is
// bound by reading the weights, but MKL's fp32 GEMM (packed or not) slows down past a few
// rows: the weights no longer stream at the memory's speed. This kernel walks the output
// features in pairs or fours, prefetches the weight rows a few features ahead and keeps
// every row's partial sums in registers, so each weight is read once for all rows.
// Built at run time for the machine it runs on (AVX-512 only); the caller falls back to
// MKL where it cannot be built.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <immintrin.h>

#include <array>
#include <optional>
#include <utility>
#include <vector>

#if !defined(__AVX512F__)
#error "the few-row kernel needs AVX-512"
#endif

namespace {

constexpr int64_t kPrefetchRows = 4;  // weight rows fetched ahead of the ones in use
constexpr int kMaxRows = 16;

// Outputs [n0, n1) of y[M, N] = x[M, K] @ w[N, K].T + b, J outputs at a time. K % 16 == 0.
template <int M, int J>
void block(const float* x, int64_t K, const float* w, int64_t N, const float* b, float* y,
           int64_t n0, int64_t n1) {
  for (int64_t o = n0; o < n1; o += J) {
    const int count = (n1 - o) < J ? int(n1 - o) : J;
    const float* row[J];
    for (int j = 0; j < J; j++) row[j] = w + (o + (j < count ? j : 0)) * K;
    __m512 acc[J][M];
    for (int j = 0; j < J; j++)
      for (int r = 0; r < M; r++) acc[j][r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 16) {
      for (int j = 0; j < J; j++) _mm_prefetch((const char*)(row[j] + kPrefetchRows * K + k), _MM_HINT_T0);
      __m512 wv[J];
      for (int j = 0; j < J; j++) wv[j] = _mm512_loadu_ps(row[j] + k);
      for (int r = 0; r < M; r++) {
        const __m512 xv = _mm512_loadu_ps(x + r * K + k);
        for (int j = 0; j < J; j++) acc[j][r] = _mm512_fmadd_ps(wv[j], xv, acc[j][r]);
      }
    }
    for (int r = 0; r < M; r++)
      for (int j = 0; j < count; j++)
        y[r * N + o + j] = _mm512_reduce_add_ps(acc[j][r]) + (b ? b[o + j] : 0.0f);
  }
}

// Four outputs at a time while the accumulators fit the 32 vector registers, then fewer.
constexpr int outputs_at_once(int m) { return m <= 4 ? 4 : m <= 12 ? 2 : 1; }

using Block = void (*)(const float*, int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t);

template <int... Ms>
constexpr auto make_table(std::integer_sequence<int, Ms...>) {
  return std::array<Block, sizeof...(Ms)>{block<Ms + 1, outputs_at_once(Ms + 1)>...};
}
constexpr auto kBlocks = make_table(std::make_integer_sequence<int, kMaxRows>{});

at::Tensor few_linear(const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(x.device().is_cpu() && w.device().is_cpu(), "few_linear: CPU tensors only");
  TORCH_CHECK(x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat, "few_linear: float32 only");
  TORCH_CHECK(w.dim() == 2 && w.is_contiguous(), "few_linear: the weight must be a contiguous [out, in] matrix");
  const int64_t N = w.size(0), K = w.size(1);
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == K, "few_linear: input features do not match the weight");
  TORCH_CHECK(K % 16 == 0, "few_linear: input features must be a multiple of 16");
  const at::Tensor x2 = x.reshape({-1, K}).contiguous();
  const int64_t M = x2.size(0);
  TORCH_CHECK(M >= 1 && M <= kMaxRows, "few_linear: 1 to 16 rows");
  const float* b = nullptr;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->scalar_type() == at::kFloat && bias->is_contiguous() && bias->numel() == N,
                "few_linear: the bias must be a contiguous float32 vector of the output size");
    b = bias->data_ptr<float>();
  }
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = N;
  at::Tensor y = at::empty({M, N}, x2.options());
  const float* xp = x2.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const Block run = kBlocks[M - 1];
  // Threads split the output features in chunks of 4; each thread streams its own rows of w.
  at::parallel_for(0, (N + 3) / 4, 16, [&](int64_t s, int64_t e) {
    run(xp, K, wp, N, b, yp, s * 4, std::min(N, e * 4));
  });
  return y.view(shape);
}

}  // namespace

TORCH_LIBRARY(logitspec, m) { m.def("few_linear(Tensor x, Tensor w, Tensor? bias) -> Tensor"); }
TORCH_LIBRARY_IMPL(logitspec, CPU, m) { m.impl("few_linear", few_linear); }
