// r1voice CPU kernels over the paged KV cache (AVX-512): RoPE fused with the cache
// write, and attention straight over block tables (no gathered K/V, no mask), for a
// decode's one query token and a prompt chunk's many alike.
//
// The cache holds fp32 or fp16 (EngineConfig.kv_cache_dtype). fp16 halves the bytes a
// decode step reads: at 32 streams the attention of a step reads every sequence's whole
// context, from DRAM, in every layer. Values are rounded to fp16 once, when written
// (round to nearest even, as torch's .half()), and widened back to fp32 when read
// (exact); all arithmetic stays fp32.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <immintrin.h>
#include <torch/library.h>

#include "attention_tiles.h"
#include "simd_math.h"

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

bool r1voice_amx_bf16_ready();  // amx_kernels.cpp

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

// A task: `tokens` consecutive query tokens of one sequence (token i sees first_len + i
// keys) and one KV head, whose keys are transposed once for all its query rows.
struct Task {
  int64_t row, tokens, first_len, kv;
  int64_t table_row;  // the run's last row: its table is checked up to the run's longest length
  int64_t shared;     // its run's Shared (-1: a decode, alone)
};

// A run's keys of one KV head transposed, and its values paired, once for all the run's
// pieces, before any piece's attention (each piece did it for itself: at long contexts,
// with a step of 32 tokens in pieces of 16, that was a sixth of SmolLM2's prefill).
// Offsets into the step's buffers.
struct Shared {
  int64_t table_row, longest, kv, kt, vt;
};
constexpr int64_t SHARED_KEYS = 256;  // keys a work item of the transposition takes

// Attention of every row (a query token) over its sequence's first lens[i] cached
// tokens. A prompt's consecutive tokens in a step share their keys: they are read and
// transposed once for all of them and multiplied as a matrix (as a prefill kernel
// would), yet every row's arithmetic is the same as alone, so a token's output depends
// on nothing else in the step (EngineConfig.batch_invariant). ND: head_dim / 16 known at
// compile time, so the value accumulators stay in registers; ND = 0: any head_dim.
template <typename T, int ND>
at::Tensor paged_attention_impl(const at::Tensor& q, const at::Tensor& k_cache,
                                const at::Tensor& v_cache, const at::Tensor& block_tables,
                                const at::Tensor& lens, double scale, int64_t bf16) {
  const bool bf16_scores = bf16 & BF16_SCORES, bf16_values = bf16 & BF16_VALUES;
  const bool tiles = bf16 & BF16_TILES;  // with both of the above
  const int64_t b = q.size(0), h = q.size(1), d = q.size(2);
  const int64_t bs = k_cache.size(1), kvh = k_cache.size(2), g = h / kvh;
  at::Tensor out = at::empty({b, h * d}, q.options());
  const float* qp = q.data_ptr<float>();
  const T* kc = cache_ptr<T>(k_cache);
  const T* vc = cache_ptr<T>(v_cache);
  const int64_t* tables = block_tables.data_ptr<int64_t>();
  const int64_t* lp = lens.data_ptr<int64_t>();
  const int64_t w = block_tables.size(1);
  const float fscale = (float)scale;
  float* op = out.data_ptr<float>();

  // Runs of rows of one sequence: each next row one key longer, the same block table.
  const int threads = at::get_num_threads();
  std::vector<Task> tasks;
  std::vector<Shared> shared;
  int64_t kt_size = 0, vt_size = 0;
  for (int64_t i = 0; i < b;) {
    int64_t n = 1;
    while (i + n < b && lp[i + n] == lp[i] + n &&
           std::equal(tables + i * w, tables + i * w + (lp[i + n] + bs - 1) / bs, tables + (i + n) * w))
      ++n;
    // Pieces small enough to spread over the threads, long enough to share the keys.
    const int64_t wanted = (2 * threads + kvh - 1) / kvh;
    int64_t piece = (n + wanted - 1) / wanted;
    piece = piece < 8 ? 8 : (piece > 64 ? 64 : piece);
    const int64_t first_shared = (int64_t)shared.size(), longest = lp[i] + n - 1;
    if (n > 1)
      for (int64_t kv = 0; kv < kvh; ++kv) {
        shared.push_back({i + n - 1, longest, kv, kt_size, vt_size});
        kt_size += (longest + 15) / 16 * 16 * (bf16_scores ? d / 2 : d);
        vt_size += !bf16_values ? 0 : tiles ? (longest + 31) / 32 * 16 * d : (longest + 1) / 2 * d;
      }
    for (int64_t s = 0; s < n; s += piece)
      for (int64_t kv = 0; kv < kvh; ++kv)
        tasks.push_back({i + s, n - s < piece ? n - s : piece, lp[i] + s, kv, i + n - 1,
                         n > 1 ? first_shared + kv : -1});
    i += n;
  }
  // The step's transposed keys and paired values, in the calling thread's buffers (kept
  // between calls: a prompt's step allocates nothing).
  static thread_local std::vector<float> kt_step;
  static thread_local std::vector<uint32_t> ktb_step, vtb_step;
  if (bf16_scores) ktb_step.resize(kt_size); else kt_step.resize(kt_size);
  vtb_step.resize(vt_size);
  // the pool's threads see their own thread_locals: they get the caller's as pointers
  float* const kt_all = kt_step.data();
  uint32_t* const ktb_all = ktb_step.data();
  uint32_t* const vtb_all = vtb_step.data();
  std::vector<std::pair<int64_t, int64_t>> items;  // (shared, first key)
  for (int64_t si = 0; si < (int64_t)shared.size(); ++si)
    for (int64_t j0 = 0; j0 < shared[si].longest; j0 += SHARED_KEYS) items.push_back({si, j0});
  at::parallel_for(0, (int64_t)items.size(), 1, [&](int64_t i0, int64_t i1) {
    int64_t rows[SHARED_KEYS];
    for (int64_t it = i0; it < i1; ++it) {
      const Shared& sh = shared[items[it].first];
      const int64_t j0 = items[it].second;
      const int64_t n = sh.longest - j0 < SHARED_KEYS ? sh.longest - j0 : SHARED_KEYS;
      const int64_t* table = tables + sh.table_row * w;
      for (int64_t j = 0; j < n; ++j)
        rows[j] = ((table[(j0 + j) / bs] * bs + (j0 + j) % bs) * kvh + sh.kv) * d;
      const T* k0 = kc + (table[0] * bs * kvh + sh.kv) * d;
      if (bf16_scores)
        transpose_keys_bf16(kc, rows, n, d, k0, ktb_all + sh.kt + j0 * d / 2);
      else
        transpose_keys(kc, rows, n, d, kt_all + sh.kt + j0 * d);
      if (tiles && j0 + n == sh.longest)
        pair_values_padded(vc, rows, n, d, vtb_all + sh.vt + j0 / 2 * d);
      else if (bf16_values)
        pair_values(vc, rows, n, d, vtb_all + sh.vt + j0 / 2 * d);
    }
  });
  // Longest first, dealt round-robin: a prompt's last tokens see the most keys.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& x, const Task& y) {
    return x.tokens * (x.first_len + x.tokens) > y.tokens * (y.first_len + y.tokens);
  });
  const int64_t ntasks = (int64_t)tasks.size();
  at::parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    static thread_local std::vector<float> scores;
    static thread_local std::vector<uint32_t> ktb, qpairs, ppairs, vpairs;
    static thread_local std::vector<int64_t> rows;
    if (tiles) configure_tiles();
    for (int64_t tid = t0; tid < t1; ++tid) {
      for (int64_t ti = tid; ti < ntasks; ti += threads) {
        const Task& task = tasks[ti];
        const int64_t longest = task.first_len + task.tokens - 1;
        const int64_t padded = (longest + 15) / 16 * 16;
        const int64_t pstride = (longest + 31) / 32 * 16;  // a row's probability pairs
        const int64_t* table = tables + task.table_row * w;
        rows.resize(longest);
        // Each token's row of this KV head, found once (a division per token in the
        // loops below was a third of the kernel's time).
        for (int64_t blk = 0, j = 0; j < longest; ++blk)
          for (int64_t o = 0; o < bs && j < longest; ++o, ++j)
            rows[j] = ((table[blk] * bs + o) * kvh + task.kv) * d;
        const bool alone = task.shared < 0;  // a decode: nothing to share the keys with
        const Shared* sh = alone ? nullptr : &shared[task.shared];
        const float* kt = alone || bf16_scores ? nullptr : kt_all + sh->kt;
        const uint32_t* vtb = alone || !bf16_values ? nullptr : vtb_all + sh->vt;
        uint32_t* ktp = nullptr;  // bf16 keys: the run's, or a decode's DECODE_KEYS at a time
        if (bf16_scores && alone) {
          ktb.resize(DECODE_KEYS * d / 2);
          ktp = ktb.data();
        } else if (bf16_scores) {
          ktp = ktb_all + sh->kt;
        }
        // Query rows token-major: (token, head of this KV head's group).
        const int64_t nrows = task.tokens * g;
        const int64_t most = tiles ? TILE_ROWS : alone ? MAX_DECODE_ROWS : MAX_SCORE_ROWS;
        // a tile of AMX rows need not hold whole groups: every row carries its own length
        const int64_t tile = tiles || g >= most ? most : most / g * g;
        scores.resize(tile * padded);
        if (bf16_scores) qpairs.resize((tiles ? TILE_ROWS : tile) * d / 2);
        if (bf16_values) ppairs.resize((tiles ? TILE_ROWS : tile) * pstride);
        const uint32_t* vtiles = vtb;  // the value pairs the tiles read: the run's or this decode's
        if (tiles && alone) {
          vpairs.resize((longest + 31) / 32 * 16 * d);
          pair_values_padded(vc, rows.data(), longest, d, vpairs.data());
          vtiles = vpairs.data();
        }
        for (int64_t r0 = 0; r0 < nrows; r0 += tile) {
          const int rn = (int)(nrows - r0 < tile ? nrows - r0 : tile);
          const float* qrow[MAX_DECODE_ROWS];
          const uint32_t* qpair[MAX_DECODE_ROWS];
          float* orow[MAX_DECODE_ROWS];
          float* srow[MAX_DECODE_ROWS];
          int64_t rlen[MAX_DECODE_ROWS];
          float inv[MAX_DECODE_ROWS];
          for (int r = 0; r < rn; ++r) {
            const int64_t tok = (r0 + r) / g, head = task.kv * g + (r0 + r) % g;
            qrow[r] = qp + ((task.row + tok) * h + head) * d;
            orow[r] = op + (task.row + tok) * h * d + head * d;
            srow[r] = scores.data() + r * padded;
            rlen[r] = task.first_len + tok;
            if (bf16_scores) {
              to_pairs(qrow[r], d, qpairs.data() + r * d / 2);
              qpair[r] = qpairs.data() + r * d / 2;
            }
          }
          if (tiles) {  // scores, softmax and values on the tiles, below
            float mx[TILE_ROWS];
            std::fill(mx, mx + rn, -INFINITY);
            if (alone) {
              float* at[TILE_ROWS];
              for (int64_t j0 = 0; j0 < rlen[0]; j0 += DECODE_KEYS) {
                const int64_t n = rlen[0] - j0 < DECODE_KEYS ? rlen[0] - j0 : DECODE_KEYS;
                transpose_keys_bf16(kc, rows.data() + j0, n, d, kc + rows[0], ktp);
                for (int r = 0; r < rn; ++r) at[r] = srow[r] + j0;
                score_tiles_any(d, rn, qpairs.data(), ktp, (n + 15) / 16, fscale, at, rlen, j0, mx);
              }
            } else {
              score_tiles_any(d, rn, qpairs.data(), ktp, (rlen[rn - 1] + 15) / 16, fscale, srow, rlen, 0,
                              mx);
            }
            for (int r = 0; r < rn; ++r)
              inv[r] = softmax_pairs(srow[r], rlen[r], mx[r], pstride, ppairs.data() + r * pstride);
            value_tiles_any(d, rn, ppairs.data(), pstride, vtiles, (rlen[rn - 1] + 31) / 32, inv, orow);
            continue;
          }
          if (bf16_scores)
            score_bf16(kc, rows.data(), alone, ktp, d, rn, qpair, rlen[rn - 1], fscale, srow);
          else if (alone)
            score_keys<T, ND>(kc, rows.data(), rlen[0], d, rn, qrow, fscale, srow);
          else
            score_rows_any(rn, qrow, kt, (rlen[rn - 1] + 15) / 16, d, fscale, srow);
          for (int r = 0; r < rn; ++r) inv[r] = softmax_row(srow[r], rlen[r]);
          if (bf16_values) {
            const uint32_t* prow[MAX_DECODE_ROWS];
            for (int r = 0; r < rn; ++r) {
              prob_pairs(srow[r], rlen[r], ppairs.data() + r * pstride);
              prow[r] = ppairs.data() + r * pstride;
            }
            weigh_values_bf16<T, ND>(vc, rows.data(), vtb, d, rn, prow, rlen, inv, orow);
          } else {
            weigh_values<T, ND>(vc, rows.data(), d, rn, srow, rlen, inv, orow);
          }
        }
      }
    }
    if (tiles) release_tiles();
  });
  return out;
}

bool half_cache(const at::Tensor& k_cache, const at::Tensor& v_cache) {
  const auto kt = k_cache.scalar_type();
  TORCH_CHECK(kt == v_cache.scalar_type() && (kt == at::kFloat || kt == at::kHalf),
              "k/v caches: both float32 or both float16");
  return kt == at::kHalf;
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

// Decode attention: q [b, h, d] (one query per sequence) over the first lens[i] cached
// tokens of sequence i, found through block_tables [b, w]; -> [b, h * d].
at::Tensor paged_decode_attention(const at::Tensor& q, const at::Tensor& k_cache,
                                  const at::Tensor& v_cache, const at::Tensor& block_tables,
                                  const at::Tensor& lens, double scale, int64_t bf16) {
  TORCH_CHECK(q.dim() == 3 && q.is_contiguous() && q.size(2) % 16 == 0 && q.size(2) <= 256,
              "q: [b, h, d], d % 16 == 0, d <= 256");
  TORCH_CHECK(k_cache.is_contiguous() && v_cache.is_contiguous() && k_cache.dim() == 4 &&
                  k_cache.size(3) == q.size(2) && q.size(1) % k_cache.size(2) == 0 &&
                  v_cache.sizes() == k_cache.sizes(), "caches: [blocks, block_size, kvh, d]");
  TORCH_CHECK(block_tables.scalar_type() == at::kLong && lens.scalar_type() == at::kLong &&
                  block_tables.is_contiguous() && block_tables.size(0) == q.size(0) &&
                  lens.numel() == q.size(0), "one block table and length a sequence");
  const int64_t* lp = lens.data_ptr<int64_t>();
  const int64_t* tp = block_tables.data_ptr<int64_t>();
  const int64_t w = block_tables.size(1), bs = k_cache.size(1), blocks = k_cache.size(0);
  for (int64_t i = 0; i < lens.numel(); ++i) {
    TORCH_CHECK(lp[i] > 0 && lp[i] <= w * bs, "length ", lp[i], " past its block table");
    for (int64_t j = 0; j < (lp[i] + bs - 1) / bs; ++j)
      TORCH_CHECK(tp[i * w + j] >= 0 && tp[i * w + j] < blocks, "block outside the cache");
  }
  TORCH_CHECK(bf16 >= 0 && bf16 <= (BF16_SCORES | BF16_VALUES | BF16_TILES),
              "bf16: a mask of 1 (scores), 2 (values), 4 (both on AMX tiles)");
  TORCH_CHECK(!(bf16 & BF16_TILES) || (bf16 == (BF16_SCORES | BF16_VALUES | BF16_TILES) &&
                                       q.size(2) <= 128 && r1voice_amx_bf16_ready()),
              "bf16 on AMX tiles needs scores and values in bf16 (mask 7), head_dim <= 128 "
              "and a CPU that grants AMX-BF16 tiles");
  TORCH_CHECK(!bf16 || (q.size(2) % 32 == 0 && __builtin_cpu_supports("avx512bf16")),
              "bf16 attention needs head_dim % 32 == 0 and a CPU with AVX512_BF16");
  const bool half = half_cache(k_cache, v_cache);
  switch (q.size(2) / 16) {
#define R1VOICE_ND(n)                                                                         \
  case n:                                                                                     \
    return half ? paged_attention_impl<uint16_t, n>(q, k_cache, v_cache, block_tables, \
                                                           lens, scale, bf16)          \
                : paged_attention_impl<float, n>(q, k_cache, v_cache, block_tables,    \
                                                        lens, scale, bf16);
    R1VOICE_ND(2)  // head_dim 32
    R1VOICE_ND(4)  // 64: SmolLM2
    R1VOICE_ND(8)  // 128: DeepSeek-R1-Distill (Qwen2, Llama)
#undef R1VOICE_ND
    default:
      return half ? paged_attention_impl<uint16_t, 0>(q, k_cache, v_cache, block_tables,
                                                             lens, scale, bf16)
                  : paged_attention_impl<float, 0>(q, k_cache, v_cache, block_tables,
                                                          lens, scale, bf16);
  }
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("rope_and_cache(Tensor qkv, Tensor cos, Tensor sin, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor slots, int num_heads, int num_kv_heads, int head_dim) -> Tensor");
  m.def("paged_decode_attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor block_tables, Tensor lens, float scale, int bf16=0) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) {
  m.impl("rope_and_cache", &rope_and_cache);
  m.impl("paged_decode_attention", &paged_decode_attention);
}
