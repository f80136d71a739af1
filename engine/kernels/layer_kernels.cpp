// r1voice CPU kernels for the rest of a decoder layer (fp32 activations, AVX-512):
// RMSNorm with the residual add and SiLU-and-mul (RoPE with the KV-cache write is in
// rope_cache_kernels.cpp, the attention in paged_kv_kernels.cpp).
// Each replaces 3-10 dispatched torch ops; at one token per step those dispatches,
// not the arithmetic, were most of a layer's time. The element-wise math follows
// Hugging Face's op order (compiled without FMA contraction) so results stay within
// float rounding of the torch path; reductions (sums, softmax) use their own order.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <immintrin.h>
#include <torch/library.h>

#include "simd_math.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

namespace {

// (norm(x + residual) * weight, x + residual); residual may be absent (first layer).
std::tuple<at::Tensor, at::Tensor> rms_norm_residual(const at::Tensor& x,
                                                     const std::optional<at::Tensor>& residual,
                                                     const at::Tensor& weight, double eps) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "x: fp32 [t, h]");
  at::Tensor xc = x.contiguous();
  const int64_t t = xc.size(0), h = xc.size(1);
  at::Tensor sum = at::empty_like(xc);
  at::Tensor out = at::empty_like(xc);
  const float* rp = residual.has_value() ? residual->contiguous().data_ptr<float>() : nullptr;
  const float* xp = xc.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  float* sp = sum.data_ptr<float>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, t, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* a = xp + r * h;
      float* s = sp + r * h;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t i = 0; i < h; i += 16) {
        const __mmask16 m = tail_mask(h - i);
        __m512 v = _mm512_maskz_loadu_ps(m, a + i);
        if (rp != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, rp + r * h + i));
        _mm512_mask_storeu_ps(s + i, m, v);
        acc = _mm512_add_ps(acc, _mm512_mul_ps(v, v));
      }
      // Hugging Face: x * rsqrt(mean(x^2) + eps), then weight * that
      const float inv = 1.0f / std::sqrt(_mm512_reduce_add_ps(acc) / (float)h + (float)eps);
      const __m512 vinv = _mm512_set1_ps(inv);
      for (int64_t i = 0; i < h; i += 16) {
        const __mmask16 m = tail_mask(h - i);
        const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), vinv);
        _mm512_mask_storeu_ps(op + r * h + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, wp + i), v));
      }
    }
  });
  return {out, sum};
}

// [t, 2i] = [gate | up] -> silu(gate) * up, [t, i]
at::Tensor silu_and_mul(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "x: fp32 [t, 2i]");
  at::Tensor xc = x.contiguous();
  const int64_t t = xc.size(0), n = xc.size(1) / 2;
  at::Tensor out = at::empty({t, n}, xc.options());
  const float* xp = xc.data_ptr<float>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, t, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 g = _mm512_maskz_loadu_ps(m, xp + r * 2 * n + i);
        const __m512 u = _mm512_maskz_loadu_ps(m, xp + r * 2 * n + n + i);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
        const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
        _mm512_mask_storeu_ps(op + r * n + i, m, _mm512_mul_ps(silu, u));
      }
    }
  });
  return out;
}

// The index of each row's largest value, as torch.argmax: the first one on ties, and
// the first NaN if a row has one. Vectorized (torch's CPU argmax is not, and a
// vocabulary-wide row per sequence made it a visible part of a step); rows in parallel.
at::Tensor argmax_rows(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.size(1) > 0, "x: fp32 [r, n]");
  at::Tensor xc = x.contiguous();
  const int64_t rows = xc.size(0), n = xc.size(1);
  at::Tensor out = at::empty({rows}, xc.options().dtype(at::kLong));
  const float* xp = xc.data_ptr<float>();
  int64_t* op = out.data_ptr<int64_t>();
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = xp + r * n;
      // Each lane starts at its first element (an all -inf row still has an index);
      // lanes past a short row's end keep index -1.
      __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      const __mmask16 first = tail_mask(n);
      __m512 best = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), first, row);
      __m512i where = _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), first, idx);
      __mmask16 nan = _mm512_mask_cmp_ps_mask(first, best, best, _CMP_UNORD_Q);
      for (int64_t i = 16; i < n && !nan; i += 16) {
        idx = _mm512_add_epi32(idx, _mm512_set1_epi32(16));
        const __mmask16 m = tail_mask(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(m, row + i);
        nan = _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
        const __mmask16 up = _mm512_mask_cmp_ps_mask(m, v, best, _CMP_GT_OQ);  // first wins ties
        best = _mm512_mask_mov_ps(best, up, v);
        where = _mm512_mask_mov_epi32(where, up, idx);
      }
      int64_t found = -1;
      if (nan) {
        for (int64_t i = 0; i < n; ++i)
          if (std::isnan(row[i])) { found = i; break; }
      } else {
        const float top = _mm512_reduce_max_ps(best);
        alignas(64) float bv[16];
        alignas(64) int32_t bi[16];
        _mm512_store_ps(bv, best);
        _mm512_store_si512(bi, where);
        for (int l = 0; l < 16; ++l)
          if (bi[l] >= 0 && bv[l] == top && (found < 0 || bi[l] < found)) found = bi[l];
      }
      op[r] = found;
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("rms_norm_residual(Tensor x, Tensor? residual, Tensor weight, float eps) -> (Tensor, Tensor)");
  m.def("silu_and_mul(Tensor x) -> Tensor");
  m.def("argmax_rows(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) {
  m.impl("rms_norm_residual", &rms_norm_residual);
  m.impl("silu_and_mul", &silu_and_mul);
  m.impl("argmax_rows", &argmax_rows);
}
