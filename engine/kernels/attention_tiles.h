// The paged attention kernel's products on AMX-BF16 tiles (paged_kv_kernels.cpp,
// EngineConfig.attention_bf16 "amx"): scores and weighted values for a tile of query
// rows at a time.
#pragma once
#include <immintrin.h>

#include "amx_tiles.h"
#include "simd_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

// The operands of "all" (q and the keys less k0 as bf16 pairs, probabilities and values
// as pairs), but each product of a query tile (16 rows) and a key or value tile is one
// TDPBF16PS, eight times VDPBF16PS's work an instruction. attention_bf16.h's
// transposed keys and paired values are already the B tiles' layout (a tile row: 16 pairs of one column block). A score sums
// its d / 32 tiles' products in order from zero, a value its key tiles of 32 in order:
// each row's bits are those of that row alone (a decode's rows pad a tile), and a row
// shorter than its tile's longest adds only products with probability 0 past its end.
constexpr int64_t TILE_ROWS = 16;
#ifdef R1VOICE_AMX  // amx_tiles.h: the compiler has the intrinsics
#define R1VOICE_TILES __attribute__((target("amx-tile,amx-bf16,avx512bf16")))

// Scores of a tile of rows (q: TILE_ROWS rows of their d / 2 pairs; rows past rn are
// computed and dropped) over `blocks` tiles of 16 transposed keys; S = d / 32. tmm0: the
// scores, tmm1-4: q (loaded once), tmm5-6: keys.
// mx[r] takes the largest of row r's scores below lens[r] (key `first` is block 0's
// first), for the softmax.
template <int S>
R1VOICE_TILES void score_tiles(int rn, const uint32_t* q, const uint32_t* kt, int64_t blocks,
                               float scale, float* const* sc, const int64_t* lens, int64_t first,
                               float* mx) {
  constexpr int64_t np = 16 * S, stride = np * 4;
  const __m512 vscale = _mm512_set1_ps(scale);
  alignas(64) float c[TILE_ROWS * 16];
  __m512 vmx[TILE_ROWS];
  for (int r = 0; r < rn; ++r) vmx[r] = _mm512_set1_ps(-INFINITY);
  _tile_loadd(1, q, stride);
  if constexpr (S >= 2) _tile_loadd(2, q + 16, stride);
  if constexpr (S >= 3) _tile_loadd(3, q + 32, stride);
  if constexpr (S >= 4) _tile_loadd(4, q + 48, stride);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint32_t* k = kt + b * np * 16;
    _tile_zero(0);
    _tile_loadd(5, k, 64);
    _tile_dpbf16ps(0, 1, 5);
    if constexpr (S >= 2) {
      _tile_loadd(6, k + 256, 64);
      _tile_dpbf16ps(0, 2, 6);
    }
    if constexpr (S >= 3) {
      _tile_loadd(5, k + 512, 64);
      _tile_dpbf16ps(0, 3, 5);
    }
    if constexpr (S >= 4) {
      _tile_loadd(6, k + 768, 64);
      _tile_dpbf16ps(0, 4, 6);
    }
    _tile_stored(0, c, 64);
    for (int r = 0; r < rn; ++r) {
      const __m512 v = _mm512_mul_ps(_mm512_load_ps(c + 16 * r), vscale);
      _mm512_storeu_ps(sc[r] + b * 16, v);
      const int64_t left = lens[r] - first - b * 16;
      vmx[r] = _mm512_mask_max_ps(vmx[r], tail_mask(left > 0 ? left : 0), vmx[r], v);
    }
  }
  for (int r = 0; r < rn; ++r) mx[r] = std::max(mx[r], _mm512_reduce_max_ps(vmx[r]));
}

// out[r] = inv[r] * sum over keys of p * value for a tile of rows: pp their probability
// pairs (TILE_ROWS rows of pstride, 0 past each row's end), vt the value pairs
// ([pair][d / 16][16], 0 past the last key), `steps` tiles of 32 keys; S = d / 32.
// tmm0: probabilities, tmm1-3: values, tmm4-7: four 16-dimension blocks of the sums.
template <int S>
R1VOICE_TILES void value_tiles(int rn, const uint32_t* pp, int64_t pstride, const uint32_t* vt,
                               int64_t steps, const float* inv, float* const* out) {
  constexpr int64_t nd = 2 * S, vstride = nd * 64;
  alignas(64) float c[4][TILE_ROWS * 16];
  for (int64_t c0 = 0; c0 < nd; c0 += 4) {
    const int64_t blocks = nd - c0 < 4 ? nd - c0 : 4;
    _tile_zero(4);
    _tile_zero(5);
    if (blocks > 2) {
      _tile_zero(6);
      _tile_zero(7);
    }
    for (int64_t s = 0; s < steps; ++s) {
      _tile_loadd(0, pp + s * 16, pstride * 4);
      const uint32_t* v = vt + (s * 16 * nd + c0) * 16;
      _tile_loadd(1, v, vstride);
      _tile_dpbf16ps(4, 0, 1);
      _tile_loadd(2, v + 16, vstride);
      _tile_dpbf16ps(5, 0, 2);
      if (blocks > 2) {
        _tile_loadd(3, v + 32, vstride);
        _tile_dpbf16ps(6, 0, 3);
        _tile_loadd(1, v + 48, vstride);
        _tile_dpbf16ps(7, 0, 1);
      }
    }
    _tile_stored(4, c[0], 64);
    _tile_stored(5, c[1], 64);
    if (blocks > 2) {
      _tile_stored(6, c[2], 64);
      _tile_stored(7, c[3], 64);
    }
    for (int r = 0; r < rn; ++r) {
      const __m512 vinv = _mm512_set1_ps(inv[r]);
      for (int64_t i = 0; i < blocks; ++i)
        _mm512_storeu_ps(out[r] + 16 * (c0 + i), _mm512_mul_ps(_mm512_load_ps(c[i] + 16 * r), vinv));
    }
  }
}

void score_tiles_any(int64_t d, int rn, const uint32_t* q, const uint32_t* kt, int64_t blocks,
                     float scale, float* const* sc, const int64_t* lens, int64_t first, float* mx) {
  switch (d / 32) {
    case 1: return score_tiles<1>(rn, q, kt, blocks, scale, sc, lens, first, mx);
    case 2: return score_tiles<2>(rn, q, kt, blocks, scale, sc, lens, first, mx);
    case 3: return score_tiles<3>(rn, q, kt, blocks, scale, sc, lens, first, mx);
    default: return score_tiles<4>(rn, q, kt, blocks, scale, sc, lens, first, mx);
  }
}

void value_tiles_any(int64_t d, int rn, const uint32_t* pp, int64_t pstride, const uint32_t* vt,
                     int64_t steps, const float* inv, float* const* out) {
  switch (d / 32) {
    case 1: return value_tiles<1>(rn, pp, pstride, vt, steps, inv, out);
    case 2: return value_tiles<2>(rn, pp, pstride, vt, steps, inv, out);
    case 3: return value_tiles<3>(rn, pp, pstride, vt, steps, inv, out);
    default: return value_tiles<4>(rn, pp, pstride, vt, steps, inv, out);
  }
}
#else  // a compiler without AMX intrinsics: the tiles are refused (paged_decode_attention)
void score_tiles_any(int64_t, int, const uint32_t*, const uint32_t*, int64_t, float, float* const*,
                     const int64_t*, int64_t, float*) {}
void value_tiles_any(int64_t, int, const uint32_t*, int64_t, const uint32_t*, int64_t, const float*,
                     float* const*) {}
#endif

}  // namespace
