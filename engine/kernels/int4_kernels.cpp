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

template <int R>
inline void tile4(const uint8_t* wb, int64_t groups, int64_t k8_per_group, const uint8_t* hi,
                  const uint8_t* lo, int64_t kp, const int32_t* xsum, const uint16_t* scales,
                  const uint16_t* mins, const float* bias, const float* sx, float* y, int64_t ldy,
                  __mmask16 store) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (int64_t g = 0; g < groups; ++g) {
    __m512i ah[R], al[R];
    for (int r = 0; r < R; ++r) ah[r] = al[r] = _mm512_setzero_si512();
    for (int64_t j = 0; j < k8_per_group; ++j) {
      const int64_t jj = g * k8_per_group + j;
      const __m512i v = _mm512_loadu_si512(wb + 64 * jj);
      const __m512i w0 = _mm512_and_si512(v, nib);
      const __m512i w1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      for (int r = 0; r < R; ++r) {
        const uint8_t* h = hi + r * kp + 8 * jj;
        const uint8_t* l = lo + r * kp + 8 * jj;
        ah[r] = _mm512_dpbusd_epi32(ah[r], w0, _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(h)));
        ah[r] = _mm512_dpbusd_epi32(ah[r], w1, _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(h + 4)));
        al[r] = _mm512_dpbusd_epi32(al[r], w0, _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(l)));
        al[r] = _mm512_dpbusd_epi32(al[r], w1, _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(l + 4)));
      }
    }
    const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 16 * g)));
    const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + 16 * g)));
    for (int r = 0; r < R; ++r) {
      const __m512 dot = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ah[r]), _mm512_set1_ps(128.0f),
                                         _mm512_cvtepi32_ps(al[r]));
      acc[r] = _mm512_fmadd_ps(s, dot, acc[r]);
      acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps((float)xsum[r * groups + g]), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    __m512 v = _mm512_mul_ps(acc[r], _mm512_set1_ps(sx[r]));
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias));
    _mm512_mask_storeu_ps(y + r * ldy, store, v);
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
      for (int64_t gi = 0; gi < groups; ++gi) {  // sum of the group's quantized inputs
        int32_t sum = 0;
        for (int64_t i = gi * g; i < (gi + 1) * g; ++i)
          sum += 128 * (int32_t)(int8_t)hi[r * k + i] + (int32_t)lo[r * k + i];
        xsum[r * groups + gi] = sum;
      }
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
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const uint8_t* wb = wp + b * block_bytes;
      const uint16_t* sb = sp + b * groups * 16;
      const uint16_t* mb = mp + b * groups * 16;
      const int64_t col = b * 16, left = n - col;
      const __mmask16 store = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
      const float* bb = bp != nullptr ? bp + col : nullptr;
      int64_t r = 0;
#define R1VOICE_TILE4(R)                                                                        \
  tile4<R>(wb, groups, k8g, hi + r * k, lo + r * k, k, xsum + r * groups, sb, mb, bb, sxp + r, \
           yp + r * n + col, n, store)
      for (; r + 4 <= m; r += 4) R1VOICE_TILE4(4);
      switch (m - r) {
        case 3: R1VOICE_TILE4(3); break;
        case 2: R1VOICE_TILE4(2); break;
        case 1: R1VOICE_TILE4(1); break;
        default: break;
      }
#undef R1VOICE_TILE4
    }
  });
  return y;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("int4_linear(Tensor x, Tensor packed, Tensor scales, Tensor mins, Tensor? bias, int n, int group_size) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) { m.impl("int4_linear", &int4_linear); }
