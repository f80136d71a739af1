// r1voice CPU kernels (AVX-512 VNNI), registered as torch.ops.r1voice.*
//
// int8_linear: y = x (q * s)^T + b for int8 weights q with one scale per output
// channel, the activation quantization fused in. It computes exactly what
// engine.layers.quantization.int8_linear computes through torch._int_mm (15-bit activations
// per row, x = 128 * hi + lo, integer sums, the same float ops in the same order),
// in one call instead of a dozen dispatched ops, reading each weight byte once per tile
// of rows. The weight layout is llama.cpp's / oneDNN's VNNI blocking: [n/16][k/4][16][4],
// so one vpdpbusd multiplies 4 input channels of 16 outputs by one broadcast
// activation group, and no horizontal sums are needed.
//
// vpdpbusd multiplies unsigned by signed bytes: lo is in [0, 127] already; hi in
// [-128, 127] is stored as hi + 128 and the excess 128 * sum_k q is subtracted
// (rowsum, computed once when packing).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <immintrin.h>
#include <torch/library.h>

#include "quantize_row.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>

namespace {

constexpr int kTileRows = 4;  // rows per weight pass: 8 accumulators + 1 weight + 8 broadcasts

// R rows x NB * 16 outputs (NB consecutive blocks) over all of k: the integer sums, then
// the float epilogue. NB = 2 reuses each broadcast activation for two weight vectors:
// fewer loads per vpdpbusd where prefill is compute-bound; decode uses NB = 1.
template <int R, int NB>
inline void tile(const int8_t* wb, int64_t k4, const uint8_t* hi, const uint8_t* lo, int64_t kp,
                 const int32_t* rowsum, const float* scales, const float* bias, const float* sx,
                 float* y, int64_t ldy, const __mmask16* store) {
  __m512i ah[NB][R], al[NB][R];
  for (int c = 0; c < NB; ++c)
    for (int r = 0; r < R; ++r) ah[c][r] = al[c][r] = _mm512_setzero_si512();
  for (int64_t j = 0; j < k4; ++j) {
    __m512i w[NB];
    for (int c = 0; c < NB; ++c) w[c] = _mm512_loadu_si512(wb + c * 16 * kp + 64 * j);
    for (int r = 0; r < R; ++r) {
      const __m512i h = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(hi + r * kp + 4 * j));
      const __m512i l = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(lo + r * kp + 4 * j));
      for (int c = 0; c < NB; ++c) {
        ah[c][r] = _mm512_dpbusd_epi32(ah[c][r], h, w[c]);
        al[c][r] = _mm512_dpbusd_epi32(al[c][r], l, w[c]);
      }
    }
  }
  for (int c = 0; c < NB; ++c) {
    const __m512i excess = _mm512_slli_epi32(_mm512_loadu_si512(rowsum + 16 * c), 7);
    const __m512 vscale = _mm512_loadu_ps(scales + 16 * c);
    for (int r = 0; r < R; ++r) {
      const __m512 h = _mm512_cvtepi32_ps(_mm512_sub_epi32(ah[c][r], excess));
      // torch: acc_hi.mul(128).add_(acc_lo).mul_(sx).mul_(scales) [+ bias]
      __m512 v = _mm512_add_ps(_mm512_mul_ps(h, _mm512_set1_ps(128.0f)), _mm512_cvtepi32_ps(al[c][r]));
      v = _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(sx[r])), vscale);
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + 16 * c));
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, store[c], v);
    }
  }
}

template <int NB>
inline void block_rows(const int8_t* wb, int64_t k4, const uint8_t* hi, const uint8_t* lo,
                       int64_t kp, int64_t m, const int32_t* rs, const float* sp, const float* bb,
                       const float* sxp, float* yp, int64_t n, const __mmask16* store) {
  int64_t r = 0;
#define R1VOICE_TILE(R) \
  tile<R, NB>(wb, k4, hi + r * kp, lo + r * kp, kp, rs, sp, bb, sxp + r, yp + r * n, n, store)
  for (; r + kTileRows <= m; r += kTileRows) R1VOICE_TILE(kTileRows);
  switch (m - r) {
    case 3: R1VOICE_TILE(3); break;
    case 2: R1VOICE_TILE(2); break;
    case 1: R1VOICE_TILE(1); break;
    default: break;
  }
#undef R1VOICE_TILE
}

// x fp32 [m, k]; packed int8 [np/16, kp/4, 16, 4]; rowsum int32 [np]; scales, bias fp32
// [np] (padded); returns y fp32 [m, n].
at::Tensor int8_linear(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& rowsum,
                       const at::Tensor& scales, const std::optional<at::Tensor>& bias,
                       int64_t n) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.is_contiguous(), "x: fp32 [m, k]");
  TORCH_CHECK(packed.scalar_type() == at::kChar && packed.is_contiguous(), "packed: int8");
  const int64_t m = x.size(0), k = x.size(1);
  const int64_t np = rowsum.size(0), kp = packed.numel() / np;
  TORCH_CHECK(kp % 4 == 0 && kp >= k && kp < k + 4 && np % 16 == 0 && n <= np, "bad packing");
  at::Tensor y = at::empty({m, n}, x.options());
  if (m == 0) return y;
  at::Tensor q = at::empty({2, m, kp}, x.options().dtype(at::kByte));
  at::Tensor sx = at::empty({m}, x.options());
  uint8_t* hi = q.data_ptr<uint8_t>();
  uint8_t* lo = hi + m * kp;
  const float* xp = x.data_ptr<float>();
  float* sxp = sx.data_ptr<float>();
  at::parallel_for(0, m, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) quantize_row(xp + r * k, k, kp, hi + r * kp, lo + r * kp, sxp + r, 128);
  });
  const int8_t* wp = packed.data_ptr<int8_t>();
  const int32_t* rs = rowsum.data_ptr<int32_t>();
  const float* sp = scales.data_ptr<float>();
  const float* bp = bias.has_value() ? bias->data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  const int64_t k4 = kp / 4, blocks = np / 16;
  // Grain: about 32 KiB of weights per task, so two threads split even one small matrix.
  const int64_t grain = std::max<int64_t>(1, 32768 / (16 * kp));
  const auto mask = [&](int64_t col) {
    const int64_t left = n - col;
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
  };
  at::parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1;) {
      const int64_t col = b * 16;
      const float* bb = bp != nullptr ? bp + col : nullptr;
      const int8_t* wb = wp + b * 16 * kp;
      // NB blocks share each broadcast activation: four for a decode's one row, two
      // for more rows (their accumulators fill the registers); the bits do not change.
      if (m == 1 && b + 4 <= b1) {
        const __mmask16 store[4] = {mask(col), mask(col + 16), mask(col + 32), mask(col + 48)};
        block_rows<4>(wb, k4, hi, lo, kp, m, rs + col, sp + col, bb, sxp, yp + col, n, store);
        b += 4;
      } else if (m > 1 && b + 1 < b1) {
        const __mmask16 store[2] = {mask(col), mask(col + 16)};
        block_rows<2>(wb, k4, hi, lo, kp, m, rs + col, sp + col, bb, sxp, yp + col, n, store);
        b += 2;
      } else {
        const __mmask16 store[1] = {mask(col)};
        block_rows<1>(wb, k4, hi, lo, kp, m, rs + col, sp + col, bb, sxp, yp + col, n, store);
        b += 1;
      }
    }
  });
  return y;
}

// q int8 [n, k] -> (packed [np/16, kp/4, 16, 4] zero padded, rowsum int32 [np]): the
// layout above, in one pass (the torch permute + sum took most of a model's load time).
std::tuple<at::Tensor, at::Tensor> pack_int8(const at::Tensor& q) {
  TORCH_CHECK(q.dim() == 2 && q.scalar_type() == at::kChar, "q: int8 [n, k]");
  at::Tensor qc = q.contiguous();
  const int64_t n = qc.size(0), k = qc.size(1);
  const int64_t np = (n + 15) / 16 * 16, kp = (k + 3) / 4 * 4;
  at::Tensor packed = at::zeros({np / 16, kp / 4, 16, 4}, qc.options());
  at::Tensor rowsum = at::zeros({np}, qc.options().dtype(at::kInt));
  const int8_t* src = qc.data_ptr<int8_t>();
  int8_t* dst = packed.data_ptr<int8_t>();
  int32_t* rs = rowsum.data_ptr<int32_t>();
  at::parallel_for(0, n, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int32_t sum = 0;
      int8_t* block = dst + (r / 16) * 16 * kp + (r % 16) * 4;
      for (int64_t c = 0; c < k; ++c) {
        block[(c / 4) * 64 + c % 4] = src[r * k + c];
        sum += src[r * k + c];
      }
      rs[r] = sum;
    }
  });
  return {packed, rowsum};
}

}  // namespace

TORCH_LIBRARY(r1voice, m) {
  m.def("int8_linear(Tensor x, Tensor packed, Tensor rowsum, Tensor scales, Tensor? bias, int n) -> Tensor");
  m.def("pack_int8(Tensor q) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) {
  m.impl("int8_linear", &int8_linear);
  m.impl("pack_int8", &pack_int8);
}
