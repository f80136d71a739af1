// int4_linear: y = x W^T + b for group-wise asymmetric int4 weights, w = q * s + m with
// q in 0..15 and one (s, m) per output and group of g input channels (Int4Linear).
//
// As llama.cpp's Q4_1 x Q8_1 dot products: the activations are quantized to int8 per row
// and per group of the weights' g inputs (one scale each, as Q8_1's blocks of 32), integer
// sums per group, then float multiply-adds per group, s * sx * sum(q * xq) + m * sx *
// sum(xq). Weights are the unsigned operand of vpdpbusd (0..15), activations the signed
// one: two vpdpbusd per 64-byte weight load and row. (15-bit activations split in two
// bytes, as int8_linear's, took four: a prompt's rows and a verification's are compute on
// two cores, and their error is under the weights' 4 bits either way.)
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

#include <cmath>
#include <cstdint>
#include <optional>

namespace {

// One row's activations, fp32 [k] -> int8 [k] with one scale per group of g, and each
// group's integer sum; computed as engine.layers.quantization.quantize_activations does in
// torch: s = max(amax * (1 / 127), 1e-10), q = round(x / s) (half to even).
inline void quantize_groups(const float* x, int64_t k, int64_t g, int8_t* q, float* sx,
                            int32_t* xsum) {
  for (int64_t g0 = 0, gi = 0; g0 < k; g0 += g, ++gi) {
    __m512 vmax = _mm512_setzero_ps();
    for (int64_t i = g0; i < g0 + g; i += 16)
      vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
    float s = _mm512_reduce_max_ps(vmax) * static_cast<float>(1.0 / 127.0);
    s = s < 1e-10f ? 1e-10f : s;
    sx[gi] = s;
    const __m512 vs = _mm512_set1_ps(s);
    __m512i sum = _mm512_setzero_si512();
    for (int64_t i = g0; i < g0 + g; i += 16) {
      __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), vs);
      v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
      const __m512i v32 = _mm512_cvtps_epi32(v);
      sum = _mm512_add_epi32(sum, v32);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(v32));
    }
    xsum[gi] = _mm512_reduce_add_epi32(sum);
  }
}

// R rows x NB consecutive blocks of 16 outputs: each broadcast activation is reused for
// NB weight vectors (a decode's one row otherwise issued a broadcast per vpdpbusd pair);
// every output's integer sums and float ops are those of NB = 1, so the bits are too.
template <int R, int NB>
inline void tile4(const uint8_t* wb, int64_t block_bytes, int64_t groups, int64_t k8_per_group,
                  const int8_t* xq, int64_t kp, const int32_t* xsum, const float* sx,
                  const uint16_t* scales, const uint16_t* mins, const float* bias, float* y,
                  int64_t ldy, const __mmask16* store) {
  __m512 acc[NB][R];
  for (int c = 0; c < NB; ++c)
    for (int r = 0; r < R; ++r) acc[c][r] = _mm512_setzero_ps();
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (int64_t g = 0; g < groups; ++g) {
    __m512i a[NB][R];
    for (int c = 0; c < NB; ++c)
      for (int r = 0; r < R; ++r) a[c][r] = _mm512_setzero_si512();
    for (int64_t j = 0; j < k8_per_group; ++j) {
      const int64_t jj = g * k8_per_group + j;
      __m512i w0[NB], w1[NB];
      for (int c = 0; c < NB; ++c) {
        const __m512i v = _mm512_loadu_si512(wb + c * block_bytes + 64 * jj);
        w0[c] = _mm512_and_si512(v, nib);
        w1[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
      }
      for (int r = 0; r < R; ++r) {
        const int8_t* xr = xq + r * kp + 8 * jj;
        const __m512i x0 = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(xr));
        const __m512i x1 = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(xr + 4));
        for (int c = 0; c < NB; ++c) {
          a[c][r] = _mm512_dpbusd_epi32(a[c][r], w0[c], x0);
          a[c][r] = _mm512_dpbusd_epi32(a[c][r], w1[c], x1);
        }
      }
    }
    for (int c = 0; c < NB; ++c) {
      const uint16_t* sc = scales + c * groups * 16 + 16 * g;
      const uint16_t* mc = mins + c * groups * 16 + 16 * g;
      const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc)));
      const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mc)));
      for (int r = 0; r < R; ++r) {
        const float sxg = sx[r * groups + g];
        const float msum = (float)xsum[r * groups + g] * sxg;
        const __m512 ss = _mm512_mul_ps(s, _mm512_set1_ps(sxg));
        acc[c][r] = _mm512_fmadd_ps(ss, _mm512_cvtepi32_ps(a[c][r]), acc[c][r]);
        acc[c][r] = _mm512_fmadd_ps(m, _mm512_set1_ps(msum), acc[c][r]);
      }
    }
  }
  for (int c = 0; c < NB; ++c) {
    for (int r = 0; r < R; ++r) {
      __m512 v = acc[c][r];
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + 16 * c));
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, store[c], v);
    }
  }
}

// x fp32 [m, k]; packed uint8 [np/16, k/8, 16, 4]; scales, mins fp16 [np/16, k/g, 16];
// bias fp32 [np] or none; -> y fp32 [m, n].
at::Tensor int4_linear(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
                       const at::Tensor& mins, const std::optional<at::Tensor>& bias, int64_t n,
                       int64_t group_size) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.is_contiguous(), "x: fp32 [m, k]");
  const int64_t m = x.size(0), k = x.size(1), g = group_size;
  TORCH_CHECK(k % g == 0 && g % 16 == 0 && packed.numel() % (8 * k) == 0, "bad int4 packing");
  const int64_t np = packed.numel() * 2 / k, groups = k / g;
  at::Tensor y = at::empty({m, n}, x.options());
  if (m == 0) return y;
  at::Tensor q = at::empty({m, k}, x.options().dtype(at::kChar));
  at::Tensor sx = at::empty({m, groups}, x.options());
  at::Tensor xs = at::empty({m, groups}, x.options().dtype(at::kInt));
  int8_t* xq = q.data_ptr<int8_t>();
  const float* xp = x.data_ptr<float>();
  float* sxp = sx.data_ptr<float>();
  int32_t* xsum = xs.data_ptr<int32_t>();
  at::parallel_for(0, m, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      quantize_groups(xp + r * k, k, g, xq + r * k, sxp + r * groups, xsum + r * groups);
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
      // One row takes blocks four at a time (the broadcasts shared), more rows two at a
      // time, in tiles of four rows and one of the rest.
      const int64_t nb = m == 1 && b + 4 <= b1 ? 4 : b + 2 <= b1 ? 2 : 1;
      const uint8_t* wb = wp + b * block_bytes;
      const uint16_t* sb = sp + b * groups * 16;
      const uint16_t* mb = mp + b * groups * 16;
      const int64_t col = b * 16;
      const __mmask16 store[4] = {mask(col), mask(col + 16), mask(col + 32), mask(col + 48)};
      const float* bb = bp != nullptr ? bp + col : nullptr;
      int64_t r = 0;
#define R1VOICE_TILE4(R, NB)                                                                 \
  tile4<R, NB>(wb, block_bytes, groups, k8g, xq + r * k, k, xsum + r * groups, sxp + r * groups, \
               sb, mb, bb, yp + r * n + col, n, store)
      if (nb == 4) {
        R1VOICE_TILE4(1, 4);
      } else if (nb == 2) {
        for (; r + 4 <= m; r += 4) R1VOICE_TILE4(4, 2);
        if (m - r == 1) R1VOICE_TILE4(1, 2);
        else if (m - r == 2) R1VOICE_TILE4(2, 2);
        else if (m - r == 3) R1VOICE_TILE4(3, 2);
      } else {
        for (; r + 4 <= m; r += 4) R1VOICE_TILE4(4, 1);
        if (m - r == 1) R1VOICE_TILE4(1, 1);
        else if (m - r == 2) R1VOICE_TILE4(2, 1);
        else if (m - r == 3) R1VOICE_TILE4(3, 1);
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
