// The paged attention kernel's softmax and fp32 weighted values (paged_kv_kernels.cpp).
#pragma once
#include <immintrin.h>

#include "kv_cache_values.h"
#include "simd_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

// Softmax numerators of one row's first len scores in place; returns 1 / their sum.
inline float softmax_row(float* sc, int64_t len) {
  __m512 vmx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < len; j += 16)
    vmx = _mm512_mask_max_ps(vmx, tail_mask(len - j), vmx, _mm512_maskz_loadu_ps(tail_mask(len - j), sc + j));
  const float mx = _mm512_reduce_max_ps(vmx);
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < len; j += 16) {
    const __mmask16 m = tail_mask(len - j);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, sc + j), _mm512_set1_ps(mx)));
    _mm512_mask_storeu_ps(sc + j, m, e);
    vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(m, e));
  }
  return 1.0f / _mm512_reduce_add_ps(vsum);
}

// The shortest and longest of n rows' lengths.
inline void span(const int64_t* lens, int n, int64_t& shortest, int64_t& longest) {
  shortest = longest = lens[0];
  for (int r = 1; r < n; ++r) {
    shortest = lens[r] < shortest ? lens[r] : shortest;
    longest = lens[r] > longest ? lens[r] : longest;
  }
}

// Values: out[r] = inv[r] * sum over its first lens[r] keys of p * value, the keys in
// order. Up to G rows a pass share each value row read; rows of later tokens see more
// keys, and only they take the keys past the shortest row's.
template <typename T, int ND>
void weigh_values(const T* vc, const int64_t* rows, int64_t d, int gn, const float* const* p,
                  const int64_t* lens, const float* inv, float* const* out) {
  constexpr int G = ND == 0 ? 1 : (ND <= 2 ? 8 : (ND <= 4 ? 5 : 2));
  constexpr int NA = ND == 0 ? 16 : ND;
  const int64_t nd = ND > 0 ? ND : d / 16;
  for (int g0 = 0; g0 < gn; g0 += G) {
    const int n = gn - g0 < G ? gn - g0 : G;
    int64_t shortest, longest;
    span(lens + g0, n, shortest, longest);
    __m512 acc[G][NA];
    for (int r = 0; r < G; ++r)
      for (int64_t c = 0; c < nd; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t j = 0; j < shortest; ++j) {
      const T* val = vc + rows[j];
      __m512 vx[NA];
      for (int64_t c = 0; c < nd; ++c) vx[c] = load16(val + 16 * c);
      for (int r = 0; r < G; ++r) {
        if (r >= n) break;
        const __m512 pj = _mm512_set1_ps(p[g0 + r][j]);
        for (int64_t c = 0; c < nd; ++c) acc[r][c] = _mm512_fmadd_ps(pj, vx[c], acc[r][c]);
      }
    }
    for (int64_t j = shortest; j < longest; ++j) {
      const T* val = vc + rows[j];
      __m512 vx[NA];
      for (int64_t c = 0; c < nd; ++c) vx[c] = load16(val + 16 * c);
      for (int r = 0; r < n; ++r) {
        if (j >= lens[g0 + r]) continue;
        const __m512 pj = _mm512_set1_ps(p[g0 + r][j]);
        for (int64_t c = 0; c < nd; ++c) acc[r][c] = _mm512_fmadd_ps(pj, vx[c], acc[r][c]);
      }
    }
    for (int r = 0; r < n; ++r) {
      const __m512 vinv = _mm512_set1_ps(inv[g0 + r]);
      for (int64_t c = 0; c < nd; ++c) _mm512_storeu_ps(out[g0 + r] + 16 * c, _mm512_mul_ps(acc[r][c], vinv));
    }
  }
}

}  // namespace
