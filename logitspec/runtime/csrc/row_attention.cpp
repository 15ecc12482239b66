// Attention whose every query row is computed exactly as a one-token pass computes it.
//
// A tree pass attends n query rows at once. Stock attention kernels block the queries and
// keys by n, so a row's sums come out in another order than in a one-token pass; in bfloat16
// or float16 the last-bit differences flip roundings and then near-tied argmaxes, and a tree
// decoder parts from greedy decoding. Here each (batch, head, query row) is its own task:
//   1. the keys it may see, in key order (a masked key is skipped: it would add an exact 0);
//   2. scores s_j = q . k_j * scale + bias_j, each dot product summed in one fixed order;
//   3. softmax over the visible keys, summed in key order;
//   4. out = sum_j p_j v_j, in key order, each output feature on its own.
// A tree node sees the cache and then its ancestors (parents come first in a tree), which are
// exactly the keys, in exactly the order, that a one-token pass at that position sees. All in
// float32, rounded to the inputs' dtype once at the end. Built beside the few-row kernel
// (logitspec/runtime/fewrows.py), which passes KERNEL_ISA.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#ifndef KERNEL_ISA
#error "build through logitspec.fewrows, which defines KERNEL_ISA"
#endif
#define ROW_ATTENTION_NAME_(isa) "row_attention_" #isa
#define ROW_ATTENTION_NAME(isa) ROW_ATTENTION_NAME_(isa)

namespace {

constexpr int kLanes = 8;  // partial sums of a dot product: lane l adds features l, l + 8, ...
// An additive mask entry at or below this hides its key (masks fill with the dtype's lowest).
constexpr float kHidden = -1e30f;

inline float widen(float v) { return v; }
inline float widen(at::BFloat16 v) { return static_cast<float>(v); }
inline float widen(at::Half v) { return static_cast<float>(v); }

// A row of d features as float32 (exact for every half type).
template <typename T>
inline void row_to_float(const T* src, int64_t d, float* dst) {
  for (int64_t i = 0; i < d; i++) dst[i] = widen(src[i]);
}

// q . k over d features (d a multiple of kLanes), in one fixed order: lanes, then a fixed tree.
inline float dot(const float* q, const float* k, int64_t d) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < d; i += kLanes)
    for (int l = 0; l < kLanes; l++) acc[l] += q[i + l] * k[i + l];
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

struct Shapes {
  int64_t B, H, n, d, Hkv, L, groups;
};

// Visible keys of query row i and their additive biases, in key order.
template <typename M>
void visible_keys(const M* mask_row, int64_t L, int64_t causal_last, std::vector<int64_t>& keys,
                  std::vector<float>& bias) {
  keys.clear();
  bias.clear();
  for (int64_t j = 0; j < L; j++) {
    float b = 0.0f;
    if (mask_row != nullptr) {
      if constexpr (std::is_same_v<M, bool>) {
        if (!mask_row[j]) continue;
      } else {
        b = widen(mask_row[j]);
        if (!(b > kHidden)) continue;  // also skips NaN and -inf
      }
    } else if (j > causal_last) {
      continue;
    }
    keys.push_back(j);
    bias.push_back(b);
  }
}

template <typename T, typename M>
void attend_row(const T* q, const T* k, int64_t k_stride, const T* v, int64_t v_stride, const M* mask_row, int64_t causal_last,
                const Shapes& s, float scale, T* out) {
  thread_local std::vector<int64_t> keys;
  thread_local std::vector<float> bias, score, qf, kf, acc;
  visible_keys(mask_row, s.L, causal_last, keys, bias);
  const int64_t d = s.d;
  qf.resize(d);
  kf.resize(d);
  acc.assign(d, 0.0f);
  row_to_float(q, d, qf.data());
  score.resize(keys.size());
  float top = -std::numeric_limits<float>::infinity();
  for (size_t j = 0; j < keys.size(); j++) {
    row_to_float(k + keys[j] * k_stride, d, kf.data());
    score[j] = dot(qf.data(), kf.data(), d) * scale + bias[j];
    top = std::max(top, score[j]);
  }
  float total = 0.0f;
  for (size_t j = 0; j < keys.size(); j++) {
    score[j] = std::exp(score[j] - top);
    total += score[j];
  }
  for (size_t j = 0; j < keys.size(); j++) {
    row_to_float(v + keys[j] * v_stride, d, kf.data());
    const float p = score[j];
    for (int64_t i = 0; i < d; i++) acc[i] += p * kf[i];
  }
  // A row that sees no key (never in a decoder's mask) gets zeros, as a fully masked softmax would not.
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  for (int64_t i = 0; i < d; i++) out[i] = static_cast<T>(acc[i] * inv);
}

template <typename T, typename M>
void attend_all(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                const Shapes& s, float scale, at::Tensor& out) {
  const T* qp = q.data_ptr<T>();
  const T* kp = k.data_ptr<T>();
  const T* vp = v.data_ptr<T>();
  T* op = out.data_ptr<T>();
  const M* mp = mask.defined() ? mask.data_ptr<M>() : nullptr;
  const bool per_head = mask.defined() && mask.size(1) != 1;
  const int64_t per_batch_mask = mask.defined() ? mask.stride(0) : 0;
  at::parallel_for(0, s.B * s.H * s.n, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; t++) {
      const int64_t b = t / (s.H * s.n), h = (t / s.n) % s.H, i = t % s.n;
      const int64_t kv = h / s.groups;
      const T* qrow = qp + ((b * s.H + h) * s.n + i) * s.d;
      const T* krow = kp + b * k.stride(0) + kv * k.stride(1);
      const T* vrow = vp + b * v.stride(0) + kv * v.stride(1);
      const M* mrow = mp ? mp + b * per_batch_mask + (per_head ? h * mask.stride(1) : 0) + i * mask.stride(2) : nullptr;
      // [B, n, H, d]: the layout transformers' attention functions return.
      T* orow = op + ((b * s.n + i) * s.H + h) * s.d;
      attend_row<T, M>(qrow, krow, k.stride(2), vrow, v.stride(2), mrow, s.L - s.n + i, s, scale, orow);
    }
  });
}

template <typename T>
void dispatch_mask(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                   const Shapes& s, float scale, at::Tensor& out) {
  if (!mask.defined() || mask.scalar_type() == at::kBool) {
    attend_all<T, bool>(q, k, v, mask, s, scale, out);
  } else if (mask.scalar_type() == at::kFloat) {
    attend_all<T, float>(q, k, v, mask, s, scale, out);
  } else if (mask.scalar_type() == at::kBFloat16) {
    attend_all<T, at::BFloat16>(q, k, v, mask, s, scale, out);
  } else {
    TORCH_CHECK(mask.scalar_type() == at::kHalf, "row_attention: a bool or floating mask");
    attend_all<T, at::Half>(q, k, v, mask, s, scale, out);
  }
}

// q: [B, H, n, d]; k, v: [B, Hkv, L, d]; mask: None (causal), or [B, 1 or H, n, L] bool (true:
// visible) or additive. Returns [B, n, H, d] in q's dtype.
at::Tensor row_attention(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in,
                         const std::optional<at::Tensor>& mask_in, double scale) {
  TORCH_CHECK(q_in.dim() == 4 && k_in.dim() == 4 && v_in.dim() == 4, "row_attention: 4-d q, k and v");
  TORCH_CHECK(q_in.device().is_cpu(), "row_attention: CPU tensors only");
  const auto dtype = q_in.scalar_type();
  TORCH_CHECK(k_in.scalar_type() == dtype && v_in.scalar_type() == dtype, "row_attention: one dtype for q, k, v");
  // The cache's keys and values are views of a larger buffer: read them in place, rows of d
  // contiguous features.
  const at::Tensor q = q_in.contiguous();
  const at::Tensor k = k_in.stride(3) == 1 ? k_in : k_in.contiguous();
  const at::Tensor v = v_in.stride(3) == 1 ? v_in : v_in.contiguous();
  Shapes s{q.size(0), q.size(1), q.size(2), q.size(3), k.size(1), k.size(2), 1};
  TORCH_CHECK(k.size(0) == s.B && v.sizes() == k.sizes() && k.size(3) == s.d, "row_attention: k and v must match q");
  TORCH_CHECK(s.Hkv > 0 && s.H % s.Hkv == 0, "row_attention: query heads must be a multiple of kv heads");
  TORCH_CHECK(s.d % kLanes == 0, "row_attention: head size must be a multiple of ", kLanes);
  TORCH_CHECK(s.L >= s.n, "row_attention: fewer keys than queries");
  s.groups = s.H / s.Hkv;
  at::Tensor mask;
  if (mask_in.has_value() && mask_in->defined()) {
    mask = mask_in->expand({s.B, mask_in->size(1), s.n, s.L}).contiguous();
    TORCH_CHECK(mask.size(1) == 1 || mask.size(1) == s.H, "row_attention: a mask of 1 or H heads");
  }
  at::Tensor out = at::empty({s.B, s.n, s.H, s.d}, q.options());
  const float sc = static_cast<float>(scale);
  if (dtype == at::kFloat) {
    dispatch_mask<float>(q, k, v, mask, s, sc, out);
  } else if (dtype == at::kBFloat16) {
    dispatch_mask<at::BFloat16>(q, k, v, mask, s, sc, out);
  } else {
    TORCH_CHECK(dtype == at::kHalf, "row_attention: float32, bfloat16 or float16");
    dispatch_mask<at::Half>(q, k, v, mask, s, sc, out);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(logitspec, m) {
  m.def(ROW_ATTENTION_NAME(KERNEL_ISA) "(Tensor q, Tensor k, Tensor v, Tensor? mask, float scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(logitspec, CPU, m) { m.impl(ROW_ATTENTION_NAME(KERNEL_ISA), row_attention); }
