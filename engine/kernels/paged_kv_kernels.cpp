// r1voice's attention kernel over the paged KV cache (AVX-512): straight over block
// tables (no gathered K/V, no mask), for a decode's one query token and a prompt chunk's
// many alike. Its parts: scores (attention_scores.h), softmax and values
// (attention_values.h), their bf16 forms (attention_bf16.h) and AMX tiles
// (attention_tiles.h); the cache's values (kv_cache_values.h), written by
// rope_cache_kernels.cpp.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <immintrin.h>
#include <torch/library.h>

#include "attention_bf16.h"
#include "attention_scores.h"
#include "attention_tiles.h"
#include "attention_values.h"
#include "kv_cache_values.h"
#include "simd_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

bool r1voice_amx_bf16_ready();  // amx_kernels.cpp

namespace {

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
  m.def("paged_decode_attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor block_tables, Tensor lens, float scale, int bf16=0) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) { m.impl("paged_decode_attention", &paged_decode_attention); }
