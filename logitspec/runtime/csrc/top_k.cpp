// The indices of the k largest entries of a float32 vector, best first (equal values: the
// lower index first), for speculation's top-k over the vocabulary between forward passes.
//
// torch.topk sorts a copy of (value, index) pairs of the whole vector, about 800 KB for a
// 49k vocabulary; right after a forward pass has streamed the weights through the caches,
// that copy misses them at every line. This keeps a heap of k entries and compares eight
// values at a time with the heap's worst, so it reads the vector once and writes nothing
// else. Built beside the few-row kernel (logitspec/runtime/fewrows.py), which passes
// KERNEL_ISA; its x86 variants both have AVX2, and every aarch64 CPU has NEON.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <algorithm>
#include <utility>
#include <vector>

#ifndef KERNEL_ISA
#error "build through logitspec.fewrows, which defines KERNEL_ISA"
#endif
#define TOP_K_NAME_(isa) "top_k_" #isa
#define TOP_K_NAME(isa) TOP_K_NAME_(isa)

namespace {

using Entry = std::pair<float, int64_t>;

// Bit i set where p[i] > worst, for i < 8 (a NaN is never larger).
inline unsigned larger8(const float* p, float worst) {
#if defined(__x86_64__)
  return _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_set1_ps(worst), _CMP_GT_OQ));
#else
  const float32x4_t w = vdupq_n_f32(worst);
  const uint32x4_t bit = {1, 2, 4, 8};
  const uint32_t lo = vaddvq_u32(vandq_u32(vcgtq_f32(vld1q_f32(p), w), bit));
  const uint32_t hi = vaddvq_u32(vandq_u32(vcgtq_f32(vld1q_f32(p + 4), w), bit));
  return lo | (hi << 4);
#endif
}

// The heap's order: `better` entries sink, so its front is the worst entry kept.
bool better(const Entry& a, const Entry& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); }

at::Tensor top_k(const at::Tensor& x, int64_t k) {
  TORCH_CHECK(x.dim() == 1 && x.device().is_cpu() && x.scalar_type() == at::kFloat, "top_k: a float32 CPU vector");
  const at::Tensor xc = x.contiguous();
  const int64_t n = xc.numel();
  k = std::max<int64_t>(0, std::min(k, n));
  const float* p = xc.data_ptr<float>();
  std::vector<Entry> heap;
  heap.reserve(k);
  int64_t i = 0;
  for (; i < n && static_cast<int64_t>(heap.size()) < k; ++i) {
    heap.emplace_back(p[i], i);
    std::push_heap(heap.begin(), heap.end(), better);
  }
  if (k > 0) {
    float worst = heap.front().first;
    // Later indices lose ties, so only a strictly larger value enters (a NaN never does).
    auto consider = [&](int64_t j) {
      if (p[j] > worst) {
        std::pop_heap(heap.begin(), heap.end(), better);
        heap.back() = Entry(p[j], j);
        std::push_heap(heap.begin(), heap.end(), better);
        worst = heap.front().first;
      }
    };
    for (; i + 8 <= n; i += 8) {
      for (unsigned mask = larger8(p + i, worst); mask; mask &= mask - 1) consider(i + __builtin_ctz(mask));
    }
    for (; i < n; ++i) consider(i);
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  at::Tensor out = at::empty({k}, at::kLong);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t j = 0; j < k; ++j) o[j] = heap[j].second;
  return out;
}

}  // namespace

// Named after the variant (KERNEL_ISA: avx512, avx2 or neon), so both may be loaded into one process.
TORCH_LIBRARY_FRAGMENT(logitspec, m) { m.def(TOP_K_NAME(KERNEL_ISA) "(Tensor x, int k) -> Tensor"); }
TORCH_LIBRARY_IMPL(logitspec, CPU, m) { m.impl(TOP_K_NAME(KERNEL_ISA), top_k); }
