// The AMX tile registers as our kernels use them (amx_kernels.cpp, attention_tiles.h):
// every tile 16 rows of 64 bytes, and the CPU's AMX bits.
#pragma once
#include <immintrin.h>

#include <cstdint>

// A compiler without AMX intrinsics (g++ < 11, clang < 12) builds the kernels' stubs, so
// the rest of the kernels still build and the AMX paths say they are not ready.
#if (defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11)
#define R1VOICE_AMX 1
#endif

namespace {

// cpuid leaf 7's edx: AMX-BF16 is bit 22, AMX-TILE 24, AMX-INT8 25.
constexpr int kAmxBf16Bit = 22, kAmxTileBit = 24, kAmxInt8Bit = 25;
inline bool cpu_has(int edx_bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
  return ((edx >> edx_bit) & 1) != 0;
}

#ifdef R1VOICE_AMX
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// All eight tiles 16 x 64 bytes. A constant in memory: built on the stack, g++ 12 dropped
// its stores as dead (it does not see ldtilecfg read them), and the tiles stayed
// unconfigured (SIGILL).
constexpr TileConfig kTiles16x64 = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

// A thread's tiles, configured before its first tile instruction and released after.
__attribute__((target("amx-tile"))) inline void configure_tiles() { _tile_loadconfig(&kTiles16x64); }
__attribute__((target("amx-tile"))) inline void release_tiles() { _tile_release(); }
#else
inline void configure_tiles() {}
inline void release_tiles() {}
#endif

}  // namespace
