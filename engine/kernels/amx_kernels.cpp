// int8_linear_amx: int8_linear (cpu_kernels.cpp) on AMX tiles, bit for bit.
//
// The same 15-bit activations (x = 128 * hi + lo per row), the same integer sums and the
// same float epilogue in the same order as the VNNI kernel, so a token's result never
// depends on which of the two its batch took (engine/layers/kernel_choice.py picks by
// measurement per row class). AMX's tdpbssd multiplies signed by signed bytes, so hi is
// kept signed and needs no rowsum correction: sum(hi * q) is the integer the VNNI kernel
// reaches as sum((hi + 128) * q) - 128 * rowsum.
//
// The weights are read in the VNNI kernel's layout, [n/16][k/4][16][4]: sixteen k-groups
// of one 16-output block are 1 KiB of contiguous bytes, exactly an AMX B tile (16 rows of
// 16 outputs x 4 bytes), so the path needs no second copy of the weights. k must be a
// multiple of 64 (a tile's depth); other shapes keep the VNNI kernel.
//
// Linux hands a process the tile registers only after it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM); amx_ready() asks once and says whether it was granted.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <torch/library.h>
#include <unistd.h>

#include "amx_tiles.h"
#include "quantize_row.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace {

#ifdef R1VOICE_AMX

constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;
constexpr int64_t kRows = 16;   // rows of activations per tile
constexpr int64_t kDepth = 64;  // bytes of k per tile row

bool request_tiles() {
  static const bool granted = [] {
    if (!cpu_has(kAmxInt8Bit) || !cpu_has(kAmxTileBit)) return false;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
}

// tmm0-3: int32 sums (hi x block 0, hi x block 1, lo x block 0, lo x block 1);
// tmm4, tmm5: hi and lo activations; tmm6, tmm7: the two weight blocks (amx_tiles.h's
// configuration: all 16 x 64 bytes).

// Sixteen rows (some may be padding) x NB blocks of 16 outputs: the sums into acc
// ([2][NB][16][16] int32: hi then lo).
template <int NB>
__attribute__((target("amx-tile,amx-int8"))) void tile_sums(const uint8_t* hi, const uint8_t* lo,
                                                             int64_t kp, const int8_t* w0,
                                                             const int8_t* w1, int32_t* acc) {
  _tile_zero(0);
  _tile_zero(2);
  if (NB == 2) {
    _tile_zero(1);
    _tile_zero(3);
  }
  for (int64_t kk = 0; kk < kp; kk += kDepth) {
    _tile_loadd(4, hi + kk, kp);
    _tile_loadd(5, lo + kk, kp);
    _tile_loadd(6, w0 + 16 * kk, 64);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(2, 5, 6);
    if (NB == 2) {
      _tile_loadd(7, w1 + 16 * kk, 64);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(3, 5, 7);
    }
  }
  constexpr int64_t kTile = kRows * 16;
  _tile_stored(0, acc, 64);
  _tile_stored(2, acc + NB * kTile, 64);
  if (NB == 2) {
    _tile_stored(1, acc + kTile, 64);
    _tile_stored(3, acc + 3 * kTile, 64);
  }
}

// The VNNI kernel's epilogue (cpu_kernels.cpp, tile<>), from the same integers.
template <int NB>
void epilogue(const int32_t* acc, int64_t rows, const float* scales, const float* bias,
              const float* sx, float* y, int64_t ldy, const __mmask16* store) {
  constexpr int64_t kTile = kRows * 16;
  for (int c = 0; c < NB; ++c) {
    const __m512 vscale = _mm512_loadu_ps(scales + 16 * c);
    for (int64_t r = 0; r < rows; ++r) {
      const __m512 h = _mm512_cvtepi32_ps(_mm512_loadu_si512(acc + c * kTile + 16 * r));
      const __m512 l = _mm512_cvtepi32_ps(_mm512_loadu_si512(acc + (NB + c) * kTile + 16 * r));
      __m512 v = _mm512_add_ps(_mm512_mul_ps(h, _mm512_set1_ps(128.0f)), l);
      v = _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(sx[r])), vscale);
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + 16 * c));
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, store[c], v);
    }
  }
}

bool amx_ready() { return request_tiles(); }

bool amx_bf16_ready() { return cpu_has(kAmxBf16Bit) && request_tiles(); }

// As int8_linear: x fp32 [m, k]; packed int8 [np/16, k/4, 16, 4]; rowsum int32 [np] (not
// read: see the top); scales, bias fp32 [np]; returns y fp32 [m, n].
at::Tensor int8_linear_amx(const at::Tensor& x, const at::Tensor& packed, const at::Tensor& rowsum,
                           const at::Tensor& scales, const std::optional<at::Tensor>& bias,
                           int64_t n) {
  TORCH_CHECK(request_tiles(), "int8_linear_amx: this CPU or kernel gives no AMX tiles");
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat && x.is_contiguous(), "x: fp32 [m, k]");
  TORCH_CHECK(packed.scalar_type() == at::kChar && packed.is_contiguous(), "packed: int8");
  const int64_t m = x.size(0), k = x.size(1);
  const int64_t np = rowsum.size(0), kp = packed.numel() / np;
  TORCH_CHECK(kp == k && k % kDepth == 0 && np % 16 == 0 && n <= np,
              "int8_linear_amx: k must be a multiple of 64 and the packing int8_linear's");
  at::Tensor y = at::empty({m, n}, x.options());
  if (m == 0) return y;
  const int64_t mp = (m + kRows - 1) / kRows * kRows;
  // The calling thread's buffers, kept: a prompt's activations are hundreds of KiB, which
  // a fresh allocation maps and faults in page by page on every call.
  thread_local std::vector<uint8_t> bytes;
  thread_local std::vector<float> scale;
  constexpr size_t kKeep = size_t{16} << 20;  // more than a long prompt's chunk is not kept
  if (bytes.size() < static_cast<size_t>(2 * mp * kp)) bytes.resize(2 * mp * kp);
  if (scale.size() < static_cast<size_t>(mp)) scale.resize(mp);
  uint8_t* hi = bytes.data();
  uint8_t* lo = hi + mp * kp;
  const float* xp = x.data_ptr<float>();
  float* sxp = scale.data();
  at::parallel_for(0, m, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) quantize_row(xp + r * k, k, kp, hi + r * kp, lo + r * kp, sxp + r, 0);
  });
  if (mp > m) {  // padding rows: zeros, whose sums are never stored
    std::memset(hi + m * kp, 0, (mp - m) * kp);
    std::memset(lo + m * kp, 0, (mp - m) * kp);
  }
  const int8_t* wp = packed.data_ptr<int8_t>();
  const float* sp = scales.data_ptr<float>();
  const float* bp = bias.has_value() ? bias->data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  const int64_t pairs = (np / 16 + 1) / 2;
  const auto mask = [&](int64_t col) {
    const int64_t left = n - col;
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
  };
  // A task holds two weight blocks (2 x 16 x k bytes) and walks every 16 rows past them.
  at::parallel_for(0, pairs, 1, [&](int64_t p0, int64_t p1) {
    configure_tiles();
    alignas(64) int32_t acc[4 * kRows * 16];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t col = 32 * p;
      const bool two = col + 16 < np;
      const int8_t* w0 = wp + col * kp;
      const __mmask16 store[2] = {mask(col), mask(col + 16)};
      const float* bb = bp != nullptr ? bp + col : nullptr;
      for (int64_t r = 0; r < m; r += kRows) {
        const int64_t rows = std::min(kRows, m - r);
        if (two) {
          tile_sums<2>(hi + r * kp, lo + r * kp, kp, w0, w0 + 16 * kp, acc);
          epilogue<2>(acc, rows, sp + col, bb, sxp + r, yp + r * n + col, n, store);
        } else {
          tile_sums<1>(hi + r * kp, lo + r * kp, kp, w0, nullptr, acc);
          epilogue<1>(acc, rows, sp + col, bb, sxp + r, yp + r * n + col, n, store);
        }
      }
    }
    release_tiles();
  });
  if (bytes.capacity() > kKeep) std::vector<uint8_t>().swap(bytes);
  return y;
}

#else  // no AMX intrinsics in this compiler

bool amx_ready() { return false; }

bool amx_bf16_ready() { return false; }

at::Tensor int8_linear_amx(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           const std::optional<at::Tensor>&, int64_t) {
  TORCH_CHECK(false, "int8_linear_amx: built by a compiler without AMX intrinsics");
  return at::Tensor();
}

#endif

}  // namespace

// For the attention kernel (paged_kv_kernels.cpp): the tiles granted and AMX-BF16 there.
bool r1voice_amx_bf16_ready() { return amx_bf16_ready(); }

TORCH_LIBRARY_FRAGMENT(r1voice, m) {
  // no tensor to dispatch on: one kernel each
  m.def("amx_ready() -> bool", &amx_ready);
  m.def("amx_bf16_ready() -> bool", &amx_bf16_ready);
  m.def("int8_linear_amx(Tensor x, Tensor packed, Tensor rowsum, Tensor scales, Tensor? bias, int n) -> Tensor");
}

TORCH_LIBRARY_IMPL(r1voice, CPU, m) { m.impl("int8_linear_amx", &int8_linear_amx); }
