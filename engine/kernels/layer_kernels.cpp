// r1voice CPU kernels for the rest of a decoder layer (fp32 activations, AVX-512):
// RMSNorm with the residual add, SiLU-and-mul, RoPE fused with the paged KV-cache
// write, and decode attention straight over block tables (no gathered K/V, no mask).
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

#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

namespace {

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

// exp for softmax and SiLU: Cephes' expf polynomial (about 1 ulp), 2^n by scalef.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-88.3762626647949f)),
                    _mm512_set1_ps(88.3762626647949f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

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

// qkv [t, (h + 2 kvh) d] -> rotated q [t, h, d]; rotated k and v are written into the
// caches ([blocks, block_size, kvh, d], viewed flat by slot) at slot_mapping[t].
// cos/sin: [t, d] (the rows of this step's positions).
at::Tensor rope_and_cache(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin,
                          at::Tensor k_cache, at::Tensor v_cache, const at::Tensor& slots,
                          int64_t num_heads, int64_t num_kv_heads, int64_t head_dim) {
  const int64_t t = qkv.size(0), d = head_dim, half = d / 2;
  TORCH_CHECK(qkv.is_contiguous() && qkv.size(1) == (num_heads + 2 * num_kv_heads) * d, "qkv");
  TORCH_CHECK(cos.is_contiguous() && sin.is_contiguous() && k_cache.is_contiguous(), "layout");
  at::Tensor q = at::empty({t, num_heads, d}, qkv.options());
  const float* src = qkv.data_ptr<float>();
  const float* cp = cos.data_ptr<float>();
  const float* sp = sin.data_ptr<float>();
  const int64_t* slot = slots.data_ptr<int64_t>();
  float* qp = q.data_ptr<float>();
  float* kc = k_cache.data_ptr<float>();
  float* vc = v_cache.data_ptr<float>();
  const int64_t width = (num_heads + 2 * num_kv_heads) * d, kv = num_kv_heads * d;
  at::parallel_for(0, t, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = src + r * width;
      const float* c = cp + r * d;
      const float* s = sp + r * d;
      for (int64_t hh = 0; hh < num_heads + num_kv_heads; ++hh) {
        const float* x = row + hh * d;
        float* out = hh < num_heads ? qp + (r * num_heads + hh) * d
                                    : kc + slot[r] * kv + (hh - num_heads) * d;
        // Hugging Face: x * cos + rotate_half(x) * sin, rotate_half = [-x2, x1]
        for (int64_t i = 0; i < d; ++i) {
          const float rot = i < half ? -x[i + half] : x[i - half];
          out[i] = x[i] * c[i] + rot * s[i];
        }
      }
      std::copy(row + (num_heads + num_kv_heads) * d, row + width, vc + slot[r] * kv);
    }
  });
  return q;
}

// Decode attention: q [b, h, d] (one query per sequence) over the first lens[i] cached
// tokens of sequence i, found through block_tables [b, w]; -> [b, h * d].
at::Tensor paged_decode_attention(const at::Tensor& q, const at::Tensor& k_cache,
                                  const at::Tensor& v_cache, const at::Tensor& block_tables,
                                  const at::Tensor& lens, double scale) {
  const int64_t b = q.size(0), h = q.size(1), d = q.size(2);
  const int64_t bs = k_cache.size(1), kvh = k_cache.size(2), g = h / kvh;
  TORCH_CHECK(q.is_contiguous() && d % 16 == 0 && d <= 256, "q: [b, h, d], d % 16 == 0");
  at::Tensor out = at::empty({b, h * d}, q.options());
  const float* qp = q.data_ptr<float>();
  const float* kc = k_cache.data_ptr<float>();
  const float* vc = v_cache.data_ptr<float>();
  const int64_t* tables = block_tables.data_ptr<int64_t>();
  const int64_t* lp = lens.data_ptr<int64_t>();
  const int64_t w = block_tables.size(1), nd = d / 16;
  float* op = out.data_ptr<float>();
  at::parallel_for(0, b * kvh, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> scores;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task / kvh, kv = task % kvh, len = lp[i];
      const int64_t* table = tables + i * w;
      scores.resize(g * len);
      // Each KV head serves g query heads: read its keys once for all of them.
      for (int64_t j = 0; j < len; ++j) {
        const float* key = kc + ((table[j / bs] * bs + j % bs) * kvh + kv) * d;
        for (int64_t gi = 0; gi < g; ++gi) {
          const float* qq = qp + (i * h + kv * g + gi) * d;
          __m512 acc = _mm512_setzero_ps();
          for (int64_t c = 0; c < nd; ++c)
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(qq + 16 * c), _mm512_loadu_ps(key + 16 * c), acc);
          scores[gi * len + j] = _mm512_reduce_add_ps(acc) * (float)scale;
        }
      }
      for (int64_t gi = 0; gi < g; ++gi) {
        float* sc = scores.data() + gi * len;
        float mx = -INFINITY;
        for (int64_t j = 0; j < len; ++j) mx = std::fmax(mx, sc[j]);
        __m512 vsum = _mm512_setzero_ps();
        for (int64_t j = 0; j < len; j += 16) {
          const __mmask16 m = tail_mask(len - j);
          const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, sc + j), _mm512_set1_ps(mx)));
          _mm512_mask_storeu_ps(sc + j, m, e);
          vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(m, e));
        }
        const float inv = 1.0f / _mm512_reduce_add_ps(vsum);
        __m512 acc[16];
        for (int64_t c = 0; c < nd; ++c) acc[c] = _mm512_setzero_ps();
        for (int64_t j = 0; j < len; ++j) {
          const float* val = vc + ((table[j / bs] * bs + j % bs) * kvh + kv) * d;
          const __m512 p = _mm512_set1_ps(sc[j]);
          for (int64_t c = 0; c < nd; ++c) acc[c] = _mm512_fmadd_ps(p, _mm512_loadu_ps(val + 16 * c), acc[c]);
        }
        float* o = op + (i * h + kv * g + gi) * d;
        for (int64_t c = 0; c < nd; ++c) _mm512_storeu_ps(o + 16 * c, _mm512_mul_ps(acc[c], _mm512_set1_ps(inv)));
      }
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("rms_norm_residual(Tensor x, Tensor? residual, Tensor weight, float eps) -> (Tensor, Tensor)");
  m.def("silu_and_mul(Tensor x) -> Tensor");
  m.def("rope_and_cache(Tensor qkv, Tensor cos, Tensor sin, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor slots, int num_heads, int num_kv_heads, int head_dim) -> Tensor");
  m.def("paged_decode_attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor block_tables, Tensor lens, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) {
  m.impl("rms_norm_residual", &rms_norm_residual);
  m.impl("silu_and_mul", &silu_and_mul);
  m.impl("rope_and_cache", &rope_and_cache);
  m.impl("paged_decode_attention", &paged_decode_attention);
}
