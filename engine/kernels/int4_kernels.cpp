// int4_linear: y = x W^T + b for group-wise asymmetric int4 weights, w = q * s + m with
// q in 0..15 and one (s, m) per output and group of g input channels (Int4Linear).
//
// As llama.cpp's Q4_1 x Q8_1 dot products: integer sums per group, then one float
// multiply-add per group, s * sum(q * x) + m * sum(x). The activations are the
// 15-bit split of int8_linear (x = 128 * hi + lo, per row), more precise than Q8_1's
// 8 bits and than the bf16 activations of torch's int4pack kernel. Weights are the
// unsigned operand of vpdpbusd here (0..15); hi and lo the signed one.
//
// Layout [n/16][k/8][16][4] bytes: byte (o, t) of k8-block j holds q[o][8j + t] in its
// low nibble and q[o][8j + 4 + t] in its high nibble, so one 64-byte load gives two
// VNNI blocks of 16 outputs x 4 inputs after an AND and a shift. Scales and mins:
// [n/16][k/g][16] fp16 (as Q4_1's), the 16 outputs of a block contiguous: in fp32 they
// were a quarter of the bytes read at group size 32.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <immintrin.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>

#include "quantize_row.h"

namespace {

// R rows x NB consecutive blocks of 16 outputs: each broadcast activation is reused for
// NB weight vectors (a decode's one row otherwise issued a broadcast per vpdpbusd pair);
// every output's integer sums and float ops are those of NB = 1, so the bits are too.
template <int R, int NB>
inline void tile4(const uint8_t* wb, int64_t block_bytes, int64_t groups, int64_t k8_per_group,
                  const uint8_t* hi, const uint8_t* lo, int64_t kp, const int32_t* xsum,
                  const uint16_t* scales, const uint16_t* mins, const float* bias, const float* sx,
                  float* y, int64_t ldy, const __mmask16* store) {
  __m512 acc[NB][R];
  for (int c = 0; c < NB; ++c)
    for (int r = 0; r < R; ++r) acc[c][r] = _mm512_setzero_ps();
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (int64_t g = 0; g < groups; ++g) {
    __m512i ah[NB][R], al[NB][R];
    for (int c = 0; c < NB; ++c)
      for (int r = 0; r < R; ++r) ah[c][r] = al[c][r] = _mm512_setzero_si512();
    for (int64_t j = 0; j < k8_per_group; ++j) {
      const int64_t jj = g * k8_per_group + j;
      __m512i w0[NB], w1[NB];
      for (int c = 0; c < NB; ++c) {
        const __m512i v = _mm512_loadu_si512(wb + c * block_bytes + 64 * jj);
        w0[c] = _mm512_and_si512(v, nib);
        w1[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      }
      for (int r = 0; r < R; ++r) {
        const uint8_t* h = hi + r * kp + 8 * jj;
        const uint8_t* l = lo + r * kp + 8 * jj;
        const __m512i h0 = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(h));
        const __m512i h1 = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(h + 4));
        const __m512i l0 = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(l));
        const __m512i l1 = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(l + 4));
        for (int c = 0; c < NB; ++c) {
          ah[c][r] = _mm512_dpbusd_epi32(ah[c][r], w0[c], h0);
          ah[c][r] = _mm512_dpbusd_epi32(ah[c][r], w1[c], h1);
          al[c][r] = _mm512_dpbusd_epi32(al[c][r], w0[c], l0);
          al[c][r] = _mm512_dpbusd_epi32(al[c][r], w1[c], l1);
        }
      }
    }
    for (int c = 0; c < NB; ++c) {
      const uint16_t* sc = scales + c * groups * 16 + 16 * g;
      const uint16_t* mc = mins + c * groups * 16 + 16 * g;
      const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc)));
      const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mc)));
      for (int r = 0; r < R; ++r) {
        const __m512 dot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ah[c][r]), _mm512_set1_ps(128.0f),
                                           _mm512_cvtepi32_ps(al[c][r]));
        acc[c][r] = _mm512_fmadd_ps(s, dot, acc[c][r]);
        acc[c][r] = _mm512_fmadd_ps(m, _mm512_set1_ps((float)xsum[r * groups + g]), acc[c][r]);
      }
    }
  }
  for (int c = 0; c < NB; ++c) {
    for (int r = 0; r < R; ++r) {
      __m512 v = _mm512_mul_ps(acc[c][r], _mm512_set1_ps(sx[r]));
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + 16 * c));
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, store[c], v);
    }
  }
}

// The sum of each group's quantized inputs, 128 * hi + lo (hi signed), in integers.
inline void group_sums(const uint8_t* hi, const uint8_t* lo, int64_t groups, int64_t g,
                       int32_t* out) {
  for (int64_t gi = 0; gi < groups; ++gi) {
    __m512i acc = _mm512_setzero_si512();
    int64_t i = gi * g;
    for (; i + 16 <= (gi + 1) * g; i += 16) {
      const __m512i h = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hi + i)));
      const __m512i l = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo + i)));
      acc = _mm512_add_epi32(acc, _mm512_add_epi32(_mm512_slli_epi32(h, 7), l));
    }
    int32_t sum = _mm512_reduce_add_epi32(acc);
    for (; i < (gi + 1) * g; ++i) sum += 128 * (int32_t)(int8_t)hi[i] + (int32_t)lo[i];
    out[gi] = sum;
  }
}

// x fp32 [m, k]; packed uint8 [np/16, k/8, 16, 4]; scales, mins fp16 [np/16, k/g, 16];
// bias fp32 [np] or none; -> y fp32 [m, n].
at::Tensor int4_linear(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
                       const at::Tensor& mins, const std::optional<at::Tensor>& bias, int64_t n,
                       int64_t group_size) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.is_contiguous(), "x: fp32 [m, k]");
  const int64_t m = x.size(0), k = x.size(1), g = group_size;
  TORCH_CHECK(k % g == 0 && g % 8 == 0 && packed.numel() % (8 * k) == 0, "bad int4 packing");
  const int64_t np = packed.numel() * 2 / k, groups = k / g;
  at::Tensor y = at::empty({m, n}, x.options());
  if (m == 0) return y;
  at::Tensor q = at::empty({2, m, k}, x.options().dtype(at::kByte));
  at::Tensor sx = at::empty({m}, x.options());
  at::Tensor xs = at::empty({m, groups}, x.options().dtype(at::kInt));
  uint8_t* hi = q.data_ptr<uint8_t>();
  uint8_t* lo = hi + m * k;
  const float* xp = x.data_ptr<float>();
  float* sxp = sx.data_ptr<float>();
  int32_t* xsum = xs.data_ptr<int32_t>();
  at::parallel_for(0, m, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      quantize_row(xp + r * k, k, k, hi + r * k, lo + r * k, sxp + r, 0);
      group_sums(hi + r * k, lo + r * k, groups, g, xsum + r * groups);
    }
  });
  const uint8_t* wp = packed.data_ptr<uint8_t>();
  TORCH_CHECK(scales.scalar_type() == at::kHalf && mins.scalar_type() == at::kHalf, "fp16 scales");
  const uint16_t* sp = reinterpret_cast<const uint16_t*>(scales.data_ptr<at::Half>());
  const uint16_t* mp = reinterpret_cast<const uint16_t*>(mins.data_ptr<at::Half>());
  const float* bp = bias.has_value() ? bias->data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  const int64_t blocks = np / 16, k8g = g / 8, block_bytes = 8 * k;
  const int64_t grain = std::max<int64_t>(1, 32768 / block_bytes);
  const auto mask = [&](int64_t col) {
    const int64_t left = n - col;
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
  };
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1;) {
      // One row takes blocks four at a time (the broadcasts shared), two or three rows two
      // at a time, tiles of four rows one (their accumulators fill the 32 registers).
      const int64_t nb = m == 1 && b + 4 <= b1 ? 4 : m < 4 && b + 2 <= b1 ? 2 : 1;
      const uint8_t* wb = wp + b * block_bytes;
      const uint16_t* sb = sp + b * groups * 16;
      const uint16_t* mb = mp + b * groups * 16;
      const int64_t col = b * 16;
      const __mmask16 store[4] = {mask(col), mask(col + 16), mask(col + 32), mask(col + 48)};
      const float* bb = bp != nullptr ? bp + col : nullptr;
      int64_t r = 0;
#define R1VOICE_TILE4(R, NB)                                                                  \
  tile4<R, NB>(wb, block_bytes, groups, k8g, hi + r * k, lo + r * k, k, xsum + r * groups, sb, \
               mb, bb, sxp + r, yp + r * n + col, n, store)
      for (; r + 4 <= m; r += 4) R1VOICE_TILE4(4, 1);
      const int64_t left = m - r;
      if (nb == 4) {
        R1VOICE_TILE4(1, 4);
      } else if (nb == 2) {
        if (left == 1) R1VOICE_TILE4(1, 2);
        else if (left == 2) R1VOICE_TILE4(2, 2);
        else if (left == 3) R1VOICE_TILE4(3, 2);
      } else {
        if (left == 1) R1VOICE_TILE4(1, 1);
        else if (left == 2) R1VOICE_TILE4(2, 1);
        else if (left == 3) R1VOICE_TILE4(3, 1);
      }
#undef R1VOICE_TILE4
      b += nb;
    }
  });
  return y;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("int4_linear(Tensor x, Tensor packed, Tensor scales, Tensor mins, Tensor? bias, int n, int group_size) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) { m.impl("int4_linear", &int4_linear); }
