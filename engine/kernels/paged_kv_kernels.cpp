// r1voice CPU kernels over the paged KV cache (AVX-512): RoPE fused with the cache
// write, and decode attention straight over block tables (no gathered K/V, no mask).
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

#include "simd_math.h"

#include <cmath>
#include <cstdint>
#include <vector>

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

// ND: head_dim / 16 known at compile time, so a key and the accumulators stay in
// registers (with a run-time count g++ kept them on the stack: every FMA went through
// a store and a reload, several times slower). ND = 0: any head_dim, the slow way.
template <typename T, int ND>
at::Tensor paged_decode_attention_impl(const at::Tensor& q, const at::Tensor& k_cache,
                                       const at::Tensor& v_cache, const at::Tensor& block_tables,
                                       const at::Tensor& lens, double scale) {
  const int64_t b = q.size(0), h = q.size(1), d = q.size(2);
  const int64_t bs = k_cache.size(1), kvh = k_cache.size(2), g = h / kvh;
  const int64_t nd = ND > 0 ? ND : d / 16;
  at::Tensor out = at::empty({b, h * d}, q.options());
  const float* qp = q.data_ptr<float>();
  const T* kc = cache_ptr<T>(k_cache);
  const T* vc = cache_ptr<T>(v_cache);
  const int64_t* tables = block_tables.data_ptr<int64_t>();
  const int64_t* lp = lens.data_ptr<int64_t>();
  const int64_t w = block_tables.size(1);
  const float fscale = (float)scale;
  float* op = out.data_ptr<float>();
  at::parallel_for(0, b * kvh, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> scores;
    std::vector<int64_t> rows;
    std::vector<float> inv(g);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task / kvh, kv = task % kvh, len = lp[i];
      const int64_t* table = tables + i * w;
      scores.resize(g * len);
      rows.resize(len);
      // Each token's row of this KV head, found once (a division per token in the
      // loops below was a third of the kernel's time).
      for (int64_t blk = 0, j = 0; j < len; ++blk)
        for (int64_t o = 0; o < bs && j < len; ++o, ++j) rows[j] = ((table[blk] * bs + o) * kvh + kv) * d;
      // Each KV head serves g query heads: read its keys once for all of them.
      for (int64_t j = 0; j < len; ++j) {
        const T* key = kc + rows[j];
        __m512 kx[16];
        for (int64_t c = 0; c < nd; ++c) kx[c] = load16(key + 16 * c);
        for (int64_t gi = 0; gi < g; ++gi) {
          const float* qq = qp + (i * h + kv * g + gi) * d;
          __m512 acc = _mm512_setzero_ps();
          for (int64_t c = 0; c < nd; ++c) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qq + 16 * c), kx[c], acc);
          scores[gi * len + j] = _mm512_reduce_add_ps(acc) * fscale;
        }
      }
      for (int64_t gi = 0; gi < g; ++gi) {  // softmax numerators in place, and 1 / sum
        float* sc = scores.data() + gi * len;
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
        inv[gi] = 1.0f / _mm512_reduce_add_ps(vsum);
      }
      // Values: up to G query heads per pass over them, so a value row read from
      // cache feeds G heads (one pass per head re-read it g times).
      constexpr int G = ND == 0 ? 1 : (ND <= 4 ? 4 : (ND <= 8 ? 2 : 1));
      constexpr int NA = ND == 0 ? 16 : ND;
      for (int64_t g0 = 0; g0 < g; g0 += G) {
        const int64_t gn = g - g0 < G ? g - g0 : G;
        __m512 acc[G][NA];
        for (int gg = 0; gg < G; ++gg)
          for (int64_t c = 0; c < nd; ++c) acc[gg][c] = _mm512_setzero_ps();
        const float* sc = scores.data() + g0 * len;
        for (int64_t j = 0; j < len; ++j) {
          const T* val = vc + rows[j];
          __m512 vx[NA];
          for (int64_t c = 0; c < nd; ++c) vx[c] = load16(val + 16 * c);
          for (int gg = 0; gg < G; ++gg) {
            if (gg >= gn) break;
            const __m512 p = _mm512_set1_ps(sc[gg * len + j]);
            for (int64_t c = 0; c < nd; ++c) acc[gg][c] = _mm512_fmadd_ps(p, vx[c], acc[gg][c]);
          }
        }
        for (int64_t gg = 0; gg < gn; ++gg) {
          float* o = op + (i * h + kv * g + g0 + gg) * d;
          const __m512 vinv = _mm512_set1_ps(inv[g0 + gg]);
          for (int64_t c = 0; c < nd; ++c) _mm512_storeu_ps(o + 16 * c, _mm512_mul_ps(acc[gg][c], vinv));
        }
      }
    }
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
                                  const at::Tensor& lens, double scale) {
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
  const bool half = half_cache(k_cache, v_cache);
  switch (q.size(2) / 16) {
#define R1VOICE_ND(n)                                                                         \
  case n:                                                                                     \
    return half ? paged_decode_attention_impl<uint16_t, n>(q, k_cache, v_cache, block_tables, \
                                                           lens, scale)                       \
                : paged_decode_attention_impl<float, n>(q, k_cache, v_cache, block_tables,    \
                                                        lens, scale);
    R1VOICE_ND(2)  // head_dim 32
    R1VOICE_ND(4)  // 64: SmolLM2
    R1VOICE_ND(8)  // 128: DeepSeek-R1-Distill (Qwen2, Llama)
#undef R1VOICE_ND
    default:
      return half ? paged_decode_attention_impl<uint16_t, 0>(q, k_cache, v_cache, block_tables,
                                                             lens, scale)
                  : paged_decode_attention_impl<float, 0>(q, k_cache, v_cache, block_tables,
                                                          lens, scale);
  }
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  m.def("rope_and_cache(Tensor qkv, Tensor cos, Tensor sin, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor slots, int num_heads, int num_kv_heads, int head_dim) -> Tensor");
  m.def("paged_decode_attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor block_tables, Tensor lens, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) {
  m.impl("rope_and_cache", &rope_and_cache);
  m.impl("paged_decode_attention", &paged_decode_attention);
}
