// r1voice's RoPE kernel fused with the paged KV cache's write (AVX-512): a step's q
// rotated, its k rotated and v written into the cache at each token's slot, in fp32 or
// rounded once to fp16 (kv_cache_values.h).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <immintrin.h>
#include <torch/library.h>

#include "kv_cache_values.h"

#include <cstdint>

namespace {

template <typename T>
at::Tensor rope_and_cache_impl(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                               const at::Tensor& k_cache, const at::Tensor& v_cache,
                               const at::Tensor& slots, int64_t num_heads, int64_t num_kv_heads,
                               int64_t d) {
  const int64_t t = qkv.size(0), half = d / 2;
  at::Tensor q = at::empty({t, num_heads, d}, qkv.options());
  const float* src = qkv.data_ptr<float>();
  const float* cp = cos.data_ptr<float>();
  const float* sp = sin.data_ptr<float>();
  const int64_t* slot = slots.data_ptr<int64_t>();
  float* qp = q.data_ptr<float>();
  T* kc = cache_ptr<T>(k_cache);
  T* vc = cache_ptr<T>(v_cache);
  const int64_t width = (num_heads + 2 * num_kv_heads) * d, kv = num_kv_heads * d;
  at::parallel_for(0, t, 16, [&](int64_t r0, int64_t r1) {
    float rotated[256];
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = src + r * width;
      const float* c = cp + r * d;
      const float* s = sp + r * d;
      for (int64_t hh = 0; hh < num_heads + num_kv_heads; ++hh) {
        const float* x = row + hh * d;
        float* out = hh < num_heads ? qp + (r * num_heads + hh) * d : rotated;
        // Hugging Face: x * cos + rotate_half(x) * sin, rotate_half = [-x2, x1]
        for (int64_t i = 0; i < d; ++i) {
          const float rot = i < half ? -x[i + half] : x[i - half];
          out[i] = x[i] * c[i] + rot * s[i];
        }
        if (hh >= num_heads) {
          T* key = kc + slot[r] * kv + (hh - num_heads) * d;
          for (int64_t i = 0; i < d; i += 16) store16(key + i, load16(rotated + i));
        }
      }
      const float* v = row + (num_heads + num_kv_heads) * d;
      for (int64_t i = 0; i < kv; i += 16) store16(vc + slot[r] * kv + i, load16(v + i));
    }
  });
  return q;
}

// qkv [t, (h + 2 kvh) d] -> rotated q [t, h, d]; rotated k and v are written into the
// caches ([blocks, block_size, kvh, d], viewed flat by slot) at slot_mapping[t].
// cos/sin: [t, d] (the rows of this step's positions).
at::Tensor rope_and_cache(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                          at::Tensor k_cache, at::Tensor v_cache, const at::Tensor& slots,
                          int64_t num_heads, int64_t num_kv_heads, int64_t head_dim) {
  TORCH_CHECK(qkv.is_contiguous() && qkv.scalar_type() == at::kFloat, "qkv: contiguous fp32");
  TORCH_CHECK(qkv.size(1) == (num_heads + 2 * num_kv_heads) * head_dim, "qkv width");
  TORCH_CHECK(head_dim % 16 == 0 && head_dim <= 256, "head_dim % 16 == 0, <= 256");
  TORCH_CHECK(cos.is_contiguous() && sin.is_contiguous() && k_cache.is_contiguous() &&
                  v_cache.is_contiguous(), "layout");
  TORCH_CHECK(k_cache.dim() == 4 && k_cache.size(2) == num_kv_heads && k_cache.size(3) == head_dim &&
                  v_cache.sizes() == k_cache.sizes(), "caches: [blocks, block_size, kvh, d]");
  TORCH_CHECK(slots.scalar_type() == at::kLong && slots.numel() == qkv.size(0), "one slot a token");
  const int64_t capacity = k_cache.size(0) * k_cache.size(1);
  const int64_t* sp = slots.data_ptr<int64_t>();
  for (int64_t i = 0; i < slots.numel(); ++i)
    TORCH_CHECK(sp[i] >= 0 && sp[i] < capacity, "slot ", sp[i], " outside the cache");
  if (half_cache(k_cache, v_cache))
    return rope_and_cache_impl<uint16_t>(qkv, cos, sin, k_cache, v_cache, slots, num_heads,
                                         num_kv_heads, head_dim);
  return rope_and_cache_impl<float>(qkv, cos, sin, k_cache, v_cache, slots, num_heads,
                                    num_kv_heads, head_dim);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("rope_and_cache(Tensor qkv, Tensor cos, Tensor sin, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor slots, int num_heads, int num_kv_heads, int head_dim) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) { m.impl("rope_and_cache", &rope_and_cache); }
