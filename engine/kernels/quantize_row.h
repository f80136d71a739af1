// The 15-bit activation quantization shared by the int8 and int4 kernels (see
// cpu_kernels.cpp): computed exactly as engine.layers.quantization.int8_linear does in torch.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

// One row: fp32 [k] -> hi + hi_offset and lo as bytes [kp] (zero padded), and its
// scale: x ~= sx * (128 * hi + lo), hi in [-128, 127], lo in [0, 127] (15 bits).
// hi_offset 128 makes hi an unsigned byte (int8 weights are the signed operand of
// vpdpbusd); 0 keeps it signed (int4 weights, 0..15, are the unsigned one).
inline void quantize_row(const float* x, int64_t k, int64_t kp, uint8_t* hi, uint8_t* lo, float* sx,
                         int hi_offset) {
  __m512 vmax = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  float amax = _mm512_reduce_max_ps(vmax);
  for (; i < k; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  // as torch: amax.mul_(1 / 16383).clamp_(min=1e-10), in float
  float s = amax * static_cast<float>(1.0 / 16383.0);
  s = s < 1e-10f ? 1e-10f : s;
  *sx = s;
  const __m512 vs = _mm512_set1_ps(s);
  const __m512 inv128 = _mm512_set1_ps(1.0f / 128.0f);
  const __m512 c128 = _mm512_set1_ps(128.0f);
  for (i = 0; i < kp; i += 16) {
    const int64_t left = k - i;
    const __mmask16 m = left >= 16 ? 0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    v = _mm512_roundscale_ps(_mm512_div_ps(v, vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 h = _mm512_floor_ps(_mm512_mul_ps(v, inv128));
    __m512 l = _mm512_sub_ps(v, _mm512_mul_ps(h, c128));
    __m512i hi32 = _mm512_add_epi32(_mm512_cvtps_epi32(h), _mm512_set1_epi32(hi_offset));
    __m512i lo32 = _mm512_cvtps_epi32(l);
    const int64_t n = kp - i < 16 ? kp - i : 16;
    const __mmask16 store = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
    // padded inputs (m = 0) contribute nothing: they meet zero weights
    _mm_mask_storeu_epi8(hi + i, store, _mm512_cvtepi32_epi8(hi32));
    _mm_mask_storeu_epi8(lo + i, store, _mm512_cvtepi32_epi8(lo32));
  }
}
