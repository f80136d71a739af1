// The paged KV cache's values as the attention and RoPE kernels read and write them
// (paged_kv_kernels.cpp, rope_cache_kernels.cpp), 16 at a time as fp32.
//
// The cache holds fp32 or fp16 (EngineConfig.kv_cache_dtype). fp16 halves the bytes a
// decode step reads: at 32 streams the attention of a step reads every sequence's whole
// context, from DRAM, in every layer. Values are rounded to fp16 once, when written
// (round to nearest even, as torch's .half()), and widened back to fp32 when read
// (exact); all arithmetic stays fp32.
#pragma once
#include <ATen/core/Tensor.h>
#include <immintrin.h>

#include <cstdint>

namespace {

// 16 cache values as fp32, and back.
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline void store16(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
inline void store16(uint16_t* p, __m512 v) {
  // saturated: a value past fp16's range would become inf, then NaN in the softmax
  const __m512 top = _mm512_set1_ps(65504.0f);
  v = _mm512_max_ps(_mm512_min_ps(v, top), _mm512_sub_ps(_mm512_setzero_ps(), top));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

template <typename T>
T* cache_ptr(const at::Tensor& cache) {
  return reinterpret_cast<T*>(cache.data_ptr());
}

inline bool half_cache(const at::Tensor& k_cache, const at::Tensor& v_cache) {
  const auto kt = k_cache.scalar_type();
  TORCH_CHECK(kt == v_cache.scalar_type() && (kt == at::kFloat || kt == at::kHalf),
              "k/v caches: both float32 or both float16");
  return kt == at::kHalf;
}

}  // namespace
