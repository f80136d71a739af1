// The paged attention kernel's bf16 products (paged_kv_kernels.cpp,
// EngineConfig.attention_bf16): scores and weighted values by VDPBF16PS, and the key
// and value pair tiles attention_tiles.h's AMX products read as well.
#pragma once
#include <immintrin.h>

#include "attention_scores.h"
#include "attention_values.h"
#include "kv_cache_values.h"
#include "simd_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

// Scores in bf16 (EngineConfig.attention_bf16 "all"): q and k rounded to bf16 (round to
// nearest even), products summed in fp32 by VDPBF16PS, two dimensions a lane per
// instruction, twice the fp32 FMA's work. Pair p holds dimensions 2p and 2p + 1. Keys
// are transposed into tiles of 16 (a lane a key) for a decode as for a prompt's tokens,
// and a score sums its pairs in order in two chains (even and odd pairs) added at the
// end: no lanes to add across, and the same bits for a token alone and in any batch.
//
// A key is rounded as k - k0, k0 the sequence's first key of that KV head (subtracted in
// fp32). Every score of a row moves by the same q.k0, which the softmax does not see,
// and what gets rounded is the keys' spread instead of their common offset: Qwen2's key
// bias, turned only slowly by RoPE's low frequencies, is most of a key's size, and
// rounding it was most of what bf16 scores lost. The idea is SageAttention's "smooth K"
// (Zhang et al., 2024), which subtracts the mean key; the first key is fixed once
// written, so a token's bits still depend on nothing written after it.
#define R1VOICE_BF16 __attribute__((target("avx512bf16")))
constexpr int64_t BF16_SCORES = 1, BF16_VALUES = 2, BF16_TILES = 4;  // paged_decode_attention's bf16 mask
constexpr int BF16_SCORE_ROWS = 8;                     // rows a key tile is read once for
constexpr int64_t DECODE_KEYS = 128;  // a decode's keys transposed at a time, in L1 cache

// x[0, d) as d / 2 bf16 pairs (d % 32 == 0): out[p] = dims 2p (low half), 2p + 1.
R1VOICE_BF16 inline void to_pairs(const float* x, int64_t d, uint32_t* out) {
  for (int64_t c = 0; c < d; c += 32)
    _mm512_storeu_si512(out + c / 2, (__m512i)_mm512_cvtne2ps_pbh(load16(x + c + 16), load16(x + c)));
}

// len keys less k0, as bf16 pair tiles: kt[(blk * d / 2 + p) * 16 + j] is pair p of key
// 16 * blk + j (0 past len). Each key's 32 dimensions become 16 pairs in one vector, and
// 16 keys' vectors are transposed as 32-bit lanes.
template <typename T>
R1VOICE_BF16 void transpose_keys_bf16(const T* kc, const int64_t* rows, int64_t len, int64_t d,
                                      const T* k0, uint32_t* kt) {
  for (int64_t j0 = 0; j0 < len; j0 += 16) {
    const int64_t n = len - j0 < 16 ? len - j0 : 16;
    uint32_t* dst = kt + j0 * d / 2;
    for (int64_t c0 = 0; c0 < d; c0 += 32) {
      const __m512 lo0 = load16(k0 + c0), hi0 = load16(k0 + c0 + 16);
      __m512 r[16];
      for (int64_t j = 0; j < 16; ++j) {
        const T* key = kc + rows[j0 + j];
        r[j] = j < n ? (__m512)_mm512_cvtne2ps_pbh(_mm512_sub_ps(load16(key + c0 + 16), hi0),
                                                   _mm512_sub_ps(load16(key + c0), lo0))
                     : _mm512_setzero_ps();
      }
      transpose16(r);
      for (int p = 0; p < 16; ++p) _mm512_storeu_ps((float*)dst + (c0 / 2 + p) * 16, r[p]);
    }
  }
}

// R rows' scores over tiles of 16 transposed keys.
template <int R>
R1VOICE_BF16 void score_rows_bf16(const uint32_t* const* q, const uint32_t* kt, int64_t blocks,
                                  int64_t d, float scale, float* const* sc) {
  const int64_t np = d / 2;
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint32_t* k = kt + b * np * 16;
    __m512 even[R], odd[R];
    for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm512_setzero_ps();
    for (int64_t p = 0; p < np; p += 2) {
      const __m512bh k0 = (__m512bh)_mm512_loadu_si512(k + p * 16);
      const __m512bh k1 = (__m512bh)_mm512_loadu_si512(k + (p + 1) * 16);
      for (int r = 0; r < R; ++r) {
        even[r] = _mm512_dpbf16_ps(even[r], (__m512bh)_mm512_set1_epi32((int)q[r][p]), k0);
        odd[r] = _mm512_dpbf16_ps(odd[r], (__m512bh)_mm512_set1_epi32((int)q[r][p + 1]), k1);
      }
    }
    for (int r = 0; r < R; ++r)
      _mm512_storeu_ps(sc[r] + b * 16, _mm512_mul_ps(_mm512_add_ps(even[r], odd[r]), vscale));
  }
}

// Any number of rows, BF16_SCORE_ROWS at a time.
void score_rows_bf16_any(int rn, const uint32_t* const* q, const uint32_t* kt, int64_t blocks,
                         int64_t d, float scale, float* const* sc) {
  for (int r0 = 0; r0 < rn; r0 += BF16_SCORE_ROWS) {
    switch (rn - r0 < BF16_SCORE_ROWS ? rn - r0 : BF16_SCORE_ROWS) {
#define R1VOICE_R(n)                                                  \
  case n:                                                             \
    score_rows_bf16<n>(q + r0, kt, blocks, d, scale, sc + r0); \
    break;
      R1VOICE_R(1) R1VOICE_R(2) R1VOICE_R(3) R1VOICE_R(4) R1VOICE_R(5) R1VOICE_R(6) R1VOICE_R(7) R1VOICE_R(8)
#undef R1VOICE_R
    }
  }
}

// bf16 scores of rn rows over their first len keys: a prompt's from its transposed keys
// kt, a decode's (alone) DECODE_KEYS at a time through kt, the same sums either way.
template <typename T>
R1VOICE_BF16 void score_bf16(const T* kc, const int64_t* rows, bool alone, uint32_t* kt, int64_t d,
                             int rn, const uint32_t* const* q, int64_t len, float scale,
                             float* const* sc) {
  if (!alone) return score_rows_bf16_any(rn, q, kt, (len + 15) / 16, d, scale, sc);
  float* at[MAX_DECODE_ROWS];
  for (int64_t j0 = 0; j0 < len; j0 += DECODE_KEYS) {
    const int64_t n = len - j0 < DECODE_KEYS ? len - j0 : DECODE_KEYS;
    transpose_keys_bf16(kc, rows + j0, n, d, kc + rows[0], kt);
    for (int r = 0; r < rn; ++r) at[r] = sc[r] + j0;
    score_rows_bf16_any(rn, q, kt, (n + 15) / 16, d, scale, at);
  }
}

// Values with bf16 products (EngineConfig.attention_bf16): a pair of consecutive keys
// a VDPBF16PS, lane c holding (v_j[c], v_j+1[c]) and the broadcast (p_j, p_j+1). A row
// of length L whose last pair straddles its end takes v_L = p_L = 0, never the next
// key, so its sum is the same bits alone as beside longer rows.

// Values 2 * jp and 2 * jp + 1 (0 when 2 * jp + 1 == len), 16 dimensions at 16 * c.
template <typename T>
R1VOICE_BF16 __attribute__((always_inline)) inline __m512bh value_pair(const T* vc, const int64_t* rows,
                                                                     int64_t jp, int64_t len, int64_t c) {
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                              23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512 a = load16(vc + rows[2 * jp] + 16 * c);
  const __m512 b = 2 * jp + 1 < len ? load16(vc + rows[2 * jp + 1] + 16 * c) : _mm512_setzero_ps();
  return (__m512bh)_mm512_permutexvar_epi16(interleave, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

// A task's value pairs, once for all its rows: vt[(jp * d / 16 + c) * 16 + i].
template <typename T>
R1VOICE_BF16 void pair_values(const T* vc, const int64_t* rows, int64_t len, int64_t d, uint32_t* vt) {
  const int64_t nd = d / 16;
  for (int64_t jp = 0; 2 * jp < len; ++jp)
    for (int64_t c = 0; c < nd; ++c)
      _mm512_storeu_si512(vt + (jp * nd + c) * 16, (__m512i)value_pair(vc, rows, jp, len, c));
}

// A row's first len probabilities as bf16 pairs (0 past len).
R1VOICE_BF16 inline void prob_pairs(const float* p, int64_t len, uint32_t* out) {
  for (int64_t j = 0; j < len; j += 32) {
    const __m512 lo = _mm512_maskz_loadu_ps(tail_mask(len - j), p + j);
    const __m512 hi = _mm512_maskz_loadu_ps(tail_mask(len - j - 16 < 0 ? 0 : len - j - 16), p + j + 16);
    _mm512_storeu_si512(out + j / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

// weigh_values with bf16 products: pp[r] the rows' probability pairs; vt the task's
// value pairs (nullptr: converted as read, a decode's keys are read once).
template <typename T, int ND>
R1VOICE_BF16 void weigh_values_bf16(const T* vc, const int64_t* rows, const uint32_t* vt, int64_t d,
                                    int gn, const uint32_t* const* pp, const int64_t* lens,
                                    const float* inv, float* const* out) {
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
    int64_t jp = 0;
    for (; 2 * jp + 1 < shortest; ++jp) {  // pairs inside every row
      __m512bh vx[NA];
      for (int64_t c = 0; c < nd; ++c)
        vx[c] = vt ? (__m512bh)_mm512_loadu_si512(vt + (jp * nd + c) * 16) : value_pair(vc, rows, jp, longest, c);
      for (int r = 0; r < G; ++r) {
        if (r >= n) break;
        const __m512bh pj = (__m512bh)_mm512_set1_epi32((int)pp[g0 + r][jp]);
        for (int64_t c = 0; c < nd; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], pj, vx[c]);
      }
    }
    for (; 2 * jp < longest; ++jp) {  // the longer rows' last pairs, each to its own end
      for (int r = 0; r < n; ++r) {
        const int64_t len = lens[g0 + r];
        if (2 * jp >= len) continue;
        const bool whole = 2 * jp + 1 < len;
        const __m512bh pj = (__m512bh)_mm512_set1_epi32((int)pp[g0 + r][jp]);
        for (int64_t c = 0; c < nd; ++c) {
          const __m512bh vx = whole && vt ? (__m512bh)_mm512_loadu_si512(vt + (jp * nd + c) * 16)
                                          : value_pair(vc, rows, jp, len, c);
          acc[r][c] = _mm512_dpbf16_ps(acc[r][c], pj, vx);
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      const __m512 vinv = _mm512_set1_ps(inv[g0 + r]);
      for (int64_t c = 0; c < nd; ++c) _mm512_storeu_ps(out[g0 + r] + 16 * c, _mm512_mul_ps(acc[r][c], vinv));
    }
  }
}

// softmax_row and prob_pairs in one pass, for the tiles: a row's first len scores (mx
// their largest) -> the softmax numerators as bf16 pairs, zeros up to `width` pairs;
// returns 1 / their sum (of the unrounded numerators).
R1VOICE_BF16 inline float softmax_pairs(const float* sc, int64_t len, float mx, int64_t width,
                                        uint32_t* out) {
  const __m512 vmx = _mm512_set1_ps(mx);
  __m512 vsum = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j < len; j += 32) {
    const __mmask16 m0 = tail_mask(len - j), m1 = tail_mask(len - j - 16 < 0 ? 0 : len - j - 16);
    const __m512 e0 = _mm512_maskz_mov_ps(m0, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m0, sc + j), vmx)));
    const __m512 e1 = _mm512_maskz_mov_ps(m1, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m1, sc + j + 16), vmx)));
    vsum = _mm512_add_ps(_mm512_add_ps(vsum, e0), e1);
    _mm512_storeu_si512(out + j / 2, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
  }
  std::fill(out + j / 2, out + width, 0u);
  return 1.0f / _mm512_reduce_add_ps(vsum);
}

// The value pairs of len keys, zeros up to the next 32 (a whole tile of keys).
template <typename T>
R1VOICE_BF16 void pair_values_padded(const T* vc, const int64_t* rows, int64_t len, int64_t d, uint32_t* vt) {
  pair_values(vc, rows, len, d, vt);
  std::fill(vt + (len + 1) / 2 * d, vt + (len + 31) / 32 * 16 * d, 0u);
}

}  // namespace
