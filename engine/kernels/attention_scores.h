// The paged attention kernel's fp32 scores (paged_kv_kernels.cpp): keys transposed into
// tiles of 16, a score row summed in one fixed order whichever way it is computed.
#pragma once
#include <immintrin.h>

#include "kv_cache_values.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

// 16 rows of 16 floats -> their transpose (r[i] lane j becomes r[j] lane i).
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), e = _mm512_castps_pd(t[i + 3]);
    u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));      // columns 0 4 8 12 of 4 rows
    u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));  // 1 5 9 13
    u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));  // 2 6 10 14
    u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));  // 3 7 11 15
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
    r[k] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    r[k + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[k + 12] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

// The first len keys of one KV head as fp32 tiles of 16 keys: kt[(blk * d + c) * 16 + j]
// is dimension c of key 16 * blk + j (0 past len). A score row is then a sum of d
// products with whole vectors, no horizontal sum a key.
template <typename T>
void transpose_keys(const T* kc, const int64_t* rows, int64_t len, int64_t d, float* kt) {
  for (int64_t j0 = 0; j0 < len; j0 += 16) {
    const int64_t n = len - j0 < 16 ? len - j0 : 16;
    float* dst = kt + j0 * d;
    for (int64_t c0 = 0; c0 < d; c0 += 16) {
      __m512 r[16];
      for (int64_t j = 0; j < 16; ++j)
        r[j] = j < n ? load16(kc + rows[j0 + j] + c0) : _mm512_setzero_ps();
      transpose16(r);
      for (int c = 0; c < 16; ++c) _mm512_storeu_ps(dst + (c0 + c) * 16, r[c]);
    }
  }
}

// A score is sum_c q[c] k[c] summed as one 16-lane vector over the dimensions (lane m
// holds c = m, m + 16, ...; an FMA chain), then its lanes added in one tree (sum_lanes),
// times scale: the same bits whichever way it is computed below, so a token's result
// does not depend on how its prompt was chunked.

// Lane m with m + 8, then + 4, + 2, + 1 (score_rows adds its lane vectors alike).
inline float sum_lanes(__m512 v) {
  const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

// One row at a time over each key (a decode): the keys read once for the rows given.
template <typename T, int ND>
void score_keys(const T* kc, const int64_t* rows, int64_t len, int64_t d, int rn,
                const float* const* q, float scale, float* const* sc) {
  const int64_t nd = ND > 0 ? ND : d / 16;
  for (int64_t j = 0; j < len; ++j) {
    const T* key = kc + rows[j];
    __m512 kx[16];
    for (int64_t c = 0; c < nd; ++c) kx[c] = load16(key + 16 * c);
    for (int r = 0; r < rn; ++r) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t c = 0; c < nd; ++c) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q[r] + 16 * c), kx[c], acc);
      sc[r][j] = sum_lanes(acc) * scale;
    }
  }
}

// R rows' scores for one tile of 16 keys: lane(m, acc) gives lane m of every row's sum
// (the keys in its 16 vector lanes), and the 16 lanes are added in sum_lanes' tree.
template <int R, typename Lane>
__attribute__((always_inline)) inline void tile_scores(const Lane& lane, __m512 vscale, float* const* sc,
                                                      int64_t at) {
  __m512 half[2][R];
  for (int hf = 0; hf < 2; ++hf) {
    __m512 quarter[2][R];
    for (int s = 0; s < 2; ++s) {
      __m512 eighth[2][R];
      for (int u = 0; u < 2; ++u) {
        __m512 lo[R], hi[R];
        lane(hf + 2 * s + 4 * u, lo);
        lane(hf + 2 * s + 4 * u + 8, hi);
        for (int r = 0; r < R; ++r) eighth[u][r] = _mm512_add_ps(lo[r], hi[r]);
      }
      for (int r = 0; r < R; ++r) quarter[s][r] = _mm512_add_ps(eighth[0][r], eighth[1][r]);
    }
    for (int r = 0; r < R; ++r) half[hf][r] = _mm512_add_ps(quarter[0][r], quarter[1][r]);
  }
  for (int r = 0; r < R; ++r)
    _mm512_storeu_ps(sc[r] + at, _mm512_mul_ps(_mm512_add_ps(half[0][r], half[1][r]), vscale));
}

// R rows at a time over tiles of 16 transposed keys (a prompt's tokens): each lane a
// key, the lanes of the sum above kept as 16 vectors and added in its tree.
template <int R>
void score_rows(const float* const* q, const float* kt, int64_t blocks, int64_t d, float scale,
                float* const* sc) {
  const int64_t nd = d / 16;
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* k = kt + b * d * 16;
    auto lane = [&](int m, __m512* acc) {  // lane m of every row's sum, for 16 keys
      for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
      for (int64_t c = m; c < 16 * nd; c += 16) {
        const __m512 kv = _mm512_loadu_ps(k + c * 16);
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][c]), kv, acc[r]);
      }
    };
    tile_scores<R>(lane, vscale, sc, b * 16);
  }
}

constexpr int MAX_SCORE_ROWS = 6;
constexpr int MAX_DECODE_ROWS = 16;  // query heads a decode's keys are read once for

void score_rows_any(int rn, const float* const* q, const float* kt, int64_t blocks, int64_t d,
                    float scale, float* const* sc) {
  switch (rn) {
#define R1VOICE_R(n) \
  case n:            \
    return score_rows<n>(q, kt, blocks, d, scale, sc);
    R1VOICE_R(1) R1VOICE_R(2) R1VOICE_R(3) R1VOICE_R(4) R1VOICE_R(5) R1VOICE_R(6)
#undef R1VOICE_R
  }
}

}  // namespace
