// autograd/kernels/bf16_gemm.cpp — bfloat16 products with float32 sums (see bf16_gemm.h).
//
// Both kernels read the same packed operands: bfloat16 pairs along k, one 32-bit word per pair,
// the even k in the low half and the odd k in the high half (vdpbf16ps's layout), zeros past K:
//   B packed once per call, in panels of kTileCols columns:
//     bp[(q * K2 + p) * kTileCols + j]  = b[2p][q kTileCols + j] | b[2p+1][q kTileCols + j] << 16
//   A packed a block at a time (kBlockTiles row tiles by one k-block of pairs), in tiles of
//   kTileRows rows, each tile's words pair by pair:
//     ap[(t * pairs + p) * kTileRows + r] = a[i][2p] | a[i][2p+1] << 16,  i = t kTileRows + r
//   except where A is bfloat16 with k contiguous and K even: its rows are pairs already, and the
//   AVX512_BF16 tile reads them where they lie (RowsOfA)
// with K2 = ceil(K / 2), zeros past N and past M.
//
// Read gemm() at the bottom first, then multiply_row_tiles (the loops) and the register tiles.
#include "autograd/kernels/bf16_gemm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <limits>
#include <optional>

#include "autograd/dtype.h"
#include "autograd/kernels/isa.h"
#include "autograd/runtime/parallel.h"

#if TG_X86_KERNELS  // the AVX-512 packing and the AVX512_BF16 tile (isa.h)
#include <immintrin.h>

#include "autograd/kernels/transpose16x16.h"
#endif

// GCC 12's AVX-512 intrinsics (shifts, unpacks, ...) start from an "undefined" register that they
// never read, and -Wall warns that it may be uninitialized once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tg::kernels::bf16_gemm {

namespace {

// The register tile, MR x NR. vdpbf16ps takes about 6 cycles and two issue per cycle, so about 12
// independent sums are needed to keep it busy; 12 rows x 2 vectors gives 24 accumulators, plus 2
// registers for B's row of the tile: 26 of the 32 zmm registers. Each step along k loads 2
// vectors of B and broadcasts 12 words of A for 24 vdpbf16ps.
constexpr int64_t kTileRows = 12;  // MR
constexpr int64_t kTileCols = 32;  // NR: two vectors of 16 floats
// KC: a k-block of one B panel is kMaxBlockPairs * 32 words * 4 bytes = 24 KB, half of L1
// (48 KB), read again for every row tile of the block; A's tile for the same k-block (9 KB)
// streams past it. (128 pairs measured about 5% slower: more passes over C, shorter loops.)
constexpr int64_t kMaxBlockPairs = 192;
// MC: A's block is kBlockTiles * kTileRows rows x one k-block = 192 x 192 words = 144 KB, a
// seventh of L2 (1 MB): it stays there while every column panel of B passes over it.
constexpr int64_t kBlockTiles = 16;
// Products below 128^3 multiply-adds run on the calling thread: waking another one costs more
// than it saves.
constexpr int64_t kSmallProduct = int64_t(128) * 128 * 128;

// An operand read as pairs along k: element (o, k), o the other index (A's row or B's column), at
// data[o * other_stride + k * k_stride].
struct PairSource {
  const void* data;
  ScalarType dtype;
  int64_t other_stride, k_stride, K;
};

PairSource a_source(const Operand& a, int64_t K) { return {a.data, a.dtype, a.row_stride, a.col_stride, K}; }
PairSource b_source(const Operand& b, int64_t K) { return {b.data, b.dtype, b.col_stride, b.row_stride, K}; }

// --- packing, scalar: any strides, any CPU ------------------------------------------------------

// Element (o, k) as bfloat16 bits: a float32 rounded to nearest even, a bfloat16 as it is.
uint32_t bits_at(const PairSource& s, int64_t o, int64_t k) {
  const int64_t at = o * s.other_stride + k * s.k_stride;
  if (s.dtype == kBFloat16) return static_cast<const BFloat16*>(s.data)[at].bits;
  return BFloat16(static_cast<const float*>(s.data)[at]).bits;
}

// The word of k-pair p: element k = 2p in the low half, k = 2p + 1 (or a zero past K) in the high.
uint32_t pair_at(const PairSource& s, int64_t o, int64_t p) {
  return bits_at(s, o, 2 * p) | (2 * p + 1 < s.K ? bits_at(s, o, 2 * p + 1) << 16 : 0u);
}

// dst[p * width + o] = the word of (other0 + o, pair p0 + p) for p < pairs and o < width; zeros
// for o >= others (past the matrix's edge).
void pack_pairs_scalar(uint32_t* dst, const PairSource& s, int64_t other0, int64_t others, int64_t p0, int64_t pairs,
                       int64_t width) {
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t o = 0; o < width; ++o) dst[p * width + o] = o < others ? pair_at(s, other0 + o, p0 + p) : 0u;
}

#if TG_X86_KERNELS

// --- packing, AVX-512: 16 words a step, the same bits as the scalar path -------------------------

__mmask16 first_lanes16(int64_t n) { return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }
__mmask32 first_lanes32(int64_t n) { return n >= 32 ? 0xFFFFFFFFu : n <= 0 ? 0u : (1u << n) - 1; }

// BFloat16::round_to_bits on 16 floats, in each lane's high half (the low half is garbage):
// f + 0x7FFF + (bit 16 of f), and every NaN all ones.
[[gnu::target("avx512f,avx512bw,avx512vl")]] __m512i round_to_high_half(__m512 x) {
  const __m512i f = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(f, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(f, _mm512_set1_epi32(0x7FFF)), lsb);
  return _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_set1_epi32(-1));
}

// The 16 consecutive elements data[at], data[at + 1], ... as bfloat16 bits in each lane's high
// half; lanes outside `lanes` read nothing and give zero.
[[gnu::target("avx512f,avx512bw,avx512vl")]] __m512i load16_high(const PairSource& s, int64_t at, __mmask16 lanes) {
  if (s.dtype == kBFloat16) {
    const __m256i h = _mm256_maskz_loadu_epi16(lanes, static_cast<const uint16_t*>(s.data) + at);
    return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
  }
  return round_to_high_half(_mm512_maskz_loadu_ps(lanes, static_cast<const float*>(s.data) + at));
}

// The 16 words of pairs 0..15 from 32 consecutive elements data[at ...], zeros past `elements`.
[[gnu::target("avx512f,avx512bw,avx512vl")]] __m512i load_pairs_along_k(const PairSource& s, int64_t at, int64_t elements) {
  if (s.dtype == kBFloat16)  // already pairs, as they lie in memory
    return _mm512_maskz_loadu_epi16(first_lanes32(elements), static_cast<const uint16_t*>(s.data) + at);
  const __m512i lo = load16_high(s, at, first_lanes16(elements));
  const __m512i hi = load16_high(s, at + 16, first_lanes16(elements - 16));
  const __m512i high_halves = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                               27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(lo, high_halves, hi);
}

// pack_pairs_scalar where the other index is contiguous (other_stride 1): for each pair, 16
// others' even and odd elements are two vector loads.
// Each k is a row of its own in memory, often more than a 4 KiB page apart (a gradient of 1536
// features: 6 KiB), and the hardware prefetcher does not cross pages: without help every row is a
// wait on memory. Each step asks for the rows kPrefetchPairs pairs ahead.
constexpr int64_t kPrefetchPairs = 16;
[[gnu::target("avx512f,avx512bw,avx512vl")]] void pack_pairs_across(uint32_t* dst, const PairSource& s, int64_t other0, int64_t others, int64_t p0,
                                      int64_t pairs, int64_t width) {
  const int64_t element_bytes = s.dtype == kBFloat16 ? 2 : 4;
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t k = 2 * (p0 + p);
    for (int64_t o = 0; o < width; o += 16) {
      const __mmask16 lanes = first_lanes16(others - o);
      const int64_t at = (other0 + o) + k * s.k_stride;
      if (k + 2 * kPrefetchPairs + 1 < s.K) {
        const char* ahead = static_cast<const char*>(s.data) + (at + 2 * kPrefetchPairs * s.k_stride) * element_bytes;
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + s.k_stride * element_bytes, _MM_HINT_T0);
      }
      const __m512i even = load16_high(s, at, lanes);
      const __m512i odd = k + 1 < s.K ? load16_high(s, at + s.k_stride, lanes) : _mm512_setzero_si512();
      const __m512i word = _mm512_or_si512(_mm512_srli_epi32(even, 16), _mm512_and_si512(odd, _mm512_set1_epi32(-65536)));
      _mm512_mask_storeu_epi32(dst + p * width + o, first_lanes16(width - o), word);
    }
  }
}

// pack_pairs_scalar where k is contiguous (k_stride 1): 16 others x 16 pairs at a time, each other's
// 32 elements one row of words, then the 16 x 16 words transposed into pair-major order.
// The rows are 16 streams through memory, too many for the hardware prefetcher to follow: each
// load asks for the same row's data two steps ahead.
[[gnu::target("avx512f,avx512bw,avx512vl")]] void pack_pairs_along(uint32_t* dst, const PairSource& s, int64_t other0, int64_t others, int64_t p0,
                                     int64_t pairs, int64_t width) {
  const int64_t element_bytes = s.dtype == kBFloat16 ? 2 : 4;
  for (int64_t pb = 0; pb < pairs; pb += 16) {
    const int64_t k0 = 2 * (p0 + pb);
    for (int64_t o = 0; o < width; o += 16) {
      __m512i rows[16];
      for (int64_t r = 0; r < 16; ++r) {
        if (o + r >= others) {
          rows[r] = _mm512_setzero_si512();
          continue;
        }
        const int64_t at = (other0 + o + r) * s.other_stride + k0;
        const char* ahead = static_cast<const char*>(s.data) + (at + 64) * element_bytes;
        _mm_prefetch(ahead, _MM_HINT_T0);
        _mm_prefetch(ahead + 64, _MM_HINT_T0);
        rows[r] = load_pairs_along_k(s, at, s.K - k0);
      }
      transpose16x16(rows);
      for (int64_t p = 0; p < std::min<int64_t>(16, pairs - pb); ++p)
        _mm512_mask_storeu_epi32(dst + (pb + p) * width + o, first_lanes16(width - o), rows[p]);
    }
  }
}

#endif  // TG_X86_KERNELS

// dst[p * width + o]: the words of others [other0, other0 + width) and pairs [p0, p0 + pairs),
// zeros past `others`. A vector path where the CPU has AVX-512 and one index is contiguous.
void pack_pairs(uint32_t* dst, const PairSource& s, int64_t other0, int64_t others, int64_t p0, int64_t pairs,
                int64_t width) {
#if TG_X86_KERNELS
  static const bool avx512 = isa_available(Isa::kAvx512);
  if (avx512 && s.other_stride == 1) return pack_pairs_across(dst, s, other0, others, p0, pairs, width);
  if (avx512 && s.k_stride == 1) return pack_pairs_along(dst, s, other0, others, p0, pairs, width);
#endif
  pack_pairs_scalar(dst, s, other0, others, p0, pairs, width);
}

// B's panels [q0, q1), every pair, into bp (the layout at the top).
void pack_b_panels(uint32_t* bp, const Operand& b, int64_t q0, int64_t q1, int64_t N, int64_t K) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t q = q0; q < q1; ++q)
    pack_pairs(bp + q * K2 * kTileCols, b_source(b, K), q * kTileCols, N - q * kTileCols, 0, K2, kTileCols);
}

// A's row tiles [t0, t1) over pairs [p0, p0 + pairs) into ap (the layout at the top).
void pack_a_block(uint32_t* ap, const Operand& a, int64_t t0, int64_t t1, int64_t p0, int64_t pairs, int64_t M,
                  int64_t K) {
  for (int64_t t = t0; t < t1; ++t)
    pack_pairs(ap + (t - t0) * pairs * kTileRows, a_source(a, K), t * kTileRows, M - t * kTileRows, p0, pairs,
               kTileRows);
}

// --- the register tile ---------------------------------------------------------------------------
// c (rows x cols of the kTileRows x kTileCols tile) = the tile's sums over `pairs` words of A and
// bp, starting from c's values when `accumulate` (an earlier k-block's sums), else from zero; plus
// the tile's columns of `bias` when given (the last k-block), added to the sums before the store.
// A's word of (tile row r, pair p) comes from one of two places:
//   PackedA   the packed tile (the layout at the top)
//   RowsOfA   A itself, where it is bfloat16 with k contiguous and K even: its rows are pairs
//             already, the word at rows[r * row_stride + 2p] (2-byte aligned: read with memcpy).
//             The forward's products multiply such activations (autocast keeps them as bfloat16),
//             and packing them cost 2% of a small GPT's bf16 step for nothing. Whole tiles only.
struct PackedA {
  const uint32_t* ap;
  uint32_t word(int r, int64_t p) const { return ap[p * kTileRows + r]; }
};
struct RowsOfA {
  const uint16_t* rows;
  int64_t row_stride;
  uint32_t word(int r, int64_t p) const {
    uint32_t w;
    std::memcpy(&w, rows + r * row_stride + 2 * p, sizeof w);
    return w;
  }
};

#if TG_X86_KERNELS

template <class AWords>
[[gnu::target("avx512f,avx512bf16"), gnu::always_inline]] inline void tile_avx512_bf16_body(
    float* c, int64_t ldc, const AWords& a, const uint32_t* bp, int64_t pairs, int64_t rows, int64_t cols,
    bool accumulate, const float* bias) {
  const __mmask16 m0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
  __m512 acc[kTileRows][2];
  for (int r = 0; r < kTileRows; ++r) {
    const bool load = accumulate && r < rows;
    acc[r][0] = load ? _mm512_maskz_loadu_ps(m0, c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_maskz_loadu_ps(m1, c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + p * kTileCols);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + p * kTileCols + 16);
    for (int r = 0; r < kTileRows; ++r) {
      // (broadcastd of a 128-bit register, not set1_epi32: the same vpbroadcastd, but Clang 16 crashes
      // optimising a bfloat16 cast of set1's splat)
      const __m512bh w = (__m512bh)_mm512_broadcastd_epi32(_mm_cvtsi32_si128(static_cast<int>(a.word(r, p))));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], w, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], w, b1);
    }
  }
  if (bias) {
    const __m512 bias0 = _mm512_maskz_loadu_ps(m0, bias), bias1 = _mm512_maskz_loadu_ps(m1, bias + 16);
    for (int r = 0; r < kTileRows; ++r) {
      acc[r][0] = _mm512_add_ps(acc[r][0], bias0);
      acc[r][1] = _mm512_add_ps(acc[r][1], bias1);
    }
  }
  for (int r = 0; r < kTileRows; ++r) {
    if (r >= rows) break;
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
  }
}

[[gnu::target("avx512f,avx512bf16")]] void tile_avx512_bf16(float* c, int64_t ldc, const uint32_t* ap,
                                                             const uint32_t* bp, int64_t pairs, int64_t rows,
                                                             int64_t cols, bool accumulate, const float* bias) {
  tile_avx512_bf16_body(c, ldc, PackedA{ap}, bp, pairs, rows, cols, accumulate, bias);
}

[[gnu::target("avx512f,avx512bf16")]] void tile_avx512_bf16_direct(float* c, int64_t ldc, const RowsOfA& a,
                                                                    const uint32_t* bp, int64_t pairs, int64_t cols,
                                                                    bool accumulate, const float* bias) {
  tile_avx512_bf16_body(c, ldc, a, bp, pairs, kTileRows, cols, accumulate, bias);
}

#endif  // TG_X86_KERNELS

// --- kFma: the same sums on float32 fused multiply-adds ------------------------------------------
// vdpbf16ps reads a denormal input as zero and writes a denormal result as zero, whatever the
// thread's floating-point mode. The FMA kernel follows that rule in plain code, on any CPU:
//   - a bfloat16 with a zero exponent (a denormal) is unpacked as a zero of its sign;
//   - every fma's result below the smallest normal float (2^-126) in magnitude becomes a zero of
//     its sign.
// (One difference is left: an exact sum just under 2^-126 that rounds up to 2^-126 in the
// denormal range stays 2^-126 here, where a flush on x86 makes it zero. No test input reaches it.)
// The second rule costs a compare and a select per fma (it halved the kernel's speed), and it can
// only matter when some sum can be a denormal, which the operands' exponents tell before any sum
// is made (sums_may_underflow, below): the flushing copy of the tile runs only then.

// The bfloat16 in a word's low half (the even k's) or high half (the odd k's), as a float32;
// with `flush`, a denormal reads as a zero (without, the operands hold none: see
// sums_may_underflow).
template <bool flush>
[[gnu::always_inline]] inline float unpacked(uint32_t bits16) {
  const bool denormal = flush && (bits16 & 0x7F80u) == 0;
  return std::bit_cast<float>((denormal ? bits16 & 0x8000u : bits16) << 16);
}
template <bool flush>
[[gnu::always_inline]] inline float low_half(uint32_t w) { return unpacked<flush>(w & 0xFFFFu); }
template <bool flush>
[[gnu::always_inline]] inline float high_half(uint32_t w) { return unpacked<flush>(w >> 16); }

// x, or a zero of its sign when x is a denormal.
[[gnu::always_inline]] inline float flushed(float x) {
  return std::fabs(x) < std::numeric_limits<float>::min() ? std::copysign(0.0f, x) : x;
}

// c += a_odd * b_odd, then c += a_even * b_even, for every lane: vdpbf16ps's order; with
// `flush`, each fma's denormal result becomes a zero of its sign.
template <bool flush>
[[gnu::always_inline]] inline void tile_fma_body(float* c, int64_t ldc, const uint32_t* ap, const uint32_t* bp,
                                                 int64_t pairs, int64_t rows, int64_t cols, bool accumulate) {
  float acc[kTileRows][kTileCols] = {};
  if (accumulate)
    for (int64_t r = 0; r < rows; ++r) std::copy(c + r * ldc, c + r * ldc + cols, acc[r]);
  for (int64_t p = 0; p < pairs; ++p) {
    float b_even[kTileCols], b_odd[kTileCols];
    for (int64_t j = 0; j < kTileCols; ++j) {
      b_even[j] = low_half<flush>(bp[p * kTileCols + j]);
      b_odd[j] = high_half<flush>(bp[p * kTileCols + j]);
    }
    for (int64_t r = 0; r < kTileRows; ++r) {
      const float a_even = low_half<flush>(ap[p * kTileRows + r]), a_odd = high_half<flush>(ap[p * kTileRows + r]);
      for (int64_t j = 0; j < kTileCols; ++j) {
        if constexpr (flush) {
          acc[r][j] = flushed(std::fma(a_odd, b_odd[j], acc[r][j]));
          acc[r][j] = flushed(std::fma(a_even, b_even[j], acc[r][j]));
        } else {
          acc[r][j] = std::fma(a_odd, b_odd[j], acc[r][j]);
          acc[r][j] = std::fma(a_even, b_even[j], acc[r][j]);
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) std::copy(acc[r], acc[r] + cols, c + r * ldc);
}

#if TG_X86_KERNELS
template <bool flush>
[[gnu::target("avx2,fma")]] void tile_fma_avx2(float* c, int64_t ldc, const uint32_t* ap, const uint32_t* bp,
                                               int64_t pairs, int64_t rows, int64_t cols, bool accumulate) {
  tile_fma_body<flush>(c, ldc, ap, bp, pairs, rows, cols, accumulate);
}
#endif

template <bool flush>
void tile_fma_portable(float* c, int64_t ldc, const uint32_t* ap, const uint32_t* bp, int64_t pairs, int64_t rows,
                       int64_t cols, bool accumulate) {
  tile_fma_body<flush>(c, ldc, ap, bp, pairs, rows, cols, accumulate);
}

using FmaTile = void (*)(float*, int64_t, const uint32_t*, const uint32_t*, int64_t, int64_t, int64_t, bool);

#if TG_X86_KERNELS
// On x86-64 the CPU flushes for free: MXCSR's DAZ (denormal inputs read as zero) and FTZ
// (denormal results written as zero) while the AVX2 tile runs, the thread's previous mode restored
// afterwards. Written out per fma, the same rule halved the AVX2 tile's speed (docs/performance.md),
// so the x86 copy keeps the CPU's mode; the portable copy, which arm64 runs, flushes in plain code.
// Both give the same bits.
class FlushDenormalsMode {
 public:
  FlushDenormalsMode() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormalsMode() { _mm_setcsr(saved_); }
  FlushDenormalsMode(const FlushDenormalsMode&) = delete;
  FlushDenormalsMode& operator=(const FlushDenormalsMode&) = delete;

 private:
  unsigned saved_;
};
#endif

// True when the FMA tile runs in the CPU's flush mode (x86-64 with AVX2), false when it flushes in
// plain code.
bool fma_tile_uses_cpu_mode() {
#if TG_X86_KERNELS
  return isa_available(Isa::kAvx2);
#else
  return false;
#endif
}

// The FMA tile for this CPU, flushing each sum in plain code or not.
FmaTile fma_tile(bool flush) {
#if TG_X86_KERNELS
  if (fma_tile_uses_cpu_mode()) return tile_fma_avx2<false>;  // the CPU's mode flushes (FlushDenormalsMode)
#endif
  return flush ? tile_fma_portable<true> : tile_fma_portable<false>;
}

// The smallest biased exponent of a nonzero element (255 when there is none), read from the
// float32 or bfloat16 bits, rounding aside (bfloat16 rounding never lowers an exponent, so this is
// at most the rounded value's). A denormal counts as exponent 0.
// bits: float32 (uint32_t, exponent from bit 23) or bfloat16 (uint16_t, from bit 7) elements.
template <class Bits>
uint32_t smallest_exponent_of(const Bits* bits, const Operand& m, int64_t rows, int64_t cols) {
  constexpr int shift = sizeof(Bits) == 4 ? 23 : 7;
  constexpr uint32_t magnitude_mask = sizeof(Bits) == 4 ? 0x7FFFFFFFu : 0x7FFFu;
  uint32_t smallest = 255;
  auto take = [&](uint32_t element) {  // a zero counts as 255 (written without a branch: it vectorises)
    const uint32_t magnitude = element & magnitude_mask;
    smallest = std::min(smallest, magnitude == 0 ? 255u : magnitude >> shift);
  };
  const bool dense = (m.col_stride == 1 && m.row_stride == cols) || (m.row_stride == 1 && m.col_stride == rows);
  if (dense) {
    for (int64_t i = 0; i < rows * cols; ++i) take(bits[i]);
  } else {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) take(bits[i * m.row_stride + j * m.col_stride]);
  }
  return smallest;
}

uint32_t smallest_exponent(const Operand& m, int64_t rows, int64_t cols) {
  if (m.dtype == kBFloat16) return smallest_exponent_of(static_cast<const uint16_t*>(m.data), m, rows, cols);
  return smallest_exponent_of(static_cast<const uint32_t*>(m.data), m, rows, cols);
}

}  // namespace

// Can a sum of the product be a denormal? Each product a*b of two bfloat16 (8 significant bits,
// the last worth 2^(e - 127 - 7) for a biased exponent e) is a multiple of 2^(ea + eb - 268), and
// so is every sum of them, rounded or not (rounding to float32 keeps a multiple of it while the
// sum is at least that large). When ea + eb - 268 >= -126 for the smallest exponents of A and B,
// every sum is 0 or at least 2^-126: no denormal, and flushing changes nothing. A denormal input
// (exponent 0) must read as zero, so it always counts.
bool sums_may_underflow(const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K) {
  const uint32_t ea = smallest_exponent(a, M, K), eb = smallest_exponent(b, K, N);
  return ea == 0 || eb == 0 || ea + eb < 268 - 126;
}

namespace {

// c[i][j] += bias[j] for rows [i0, i1), columns [0, N): the bias for kFma, added once its sums
// are stored, with no flush of denormals (linear's float32 add has none).
void add_bias_rows(float* c, int64_t ldc, const float* bias, int64_t i0, int64_t i1, int64_t N) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = 0; j < N; ++j) c[i * ldc + j] += bias[j];
}

// --- the loops ---------------------------------------------------------------------------------

// The loops, outermost first (the GotoBLAS/BLIS order):
//   threads          each takes a fixed range of row tiles (the k loop is never split, so every
//                    c[i][j] is summed by one thread in one order, whatever the thread count)
//   row blocks       kBlockTiles row tiles of A at a time
//   k blocks         up to kMaxBlockPairs pairs, equal in size: pack A's block (it stays in L2)
//   column panels    kTileCols columns of packed B: one k-block of a panel stays in L1
//   row tiles        the register tile: kTileRows x kTileCols sums in registers over the k-block,
//                    loaded from C when an earlier k-block has stored them (float32 in memory is
//                    exact, so the sums are the same as in one pass)

// Rows [t0 kTileRows, t1 kTileRows) of C (clipped to M), from A (packed here, a block at a time)
// and B (packed whole, bp), plus the bias when given.
void multiply_row_tiles(float* c, int64_t ldc, const Operand& a, const uint32_t* bp, const float* bias, int64_t t0,
                        int64_t t1, int64_t M, int64_t N, int64_t K, Kernel kernel, bool flush) {
  const FmaTile fma = fma_tile(flush);
#if TG_X86_KERNELS
  std::optional<FlushDenormalsMode> mode;  // the AVX2 tile's flush (above)
  if (kernel == Kernel::kFma && fma_tile_uses_cpu_mode()) mode.emplace();
#endif
  const int64_t K2 = (K + 1) / 2, panels = (N + kTileCols - 1) / kTileCols;
  const int64_t k_blocks = (K2 + kMaxBlockPairs - 1) / kMaxBlockPairs;  // equal blocks, none much shorter
  const int64_t block_pairs = (K2 + k_blocks - 1) / k_blocks;
  // not zeroed first: packing writes every word, the zeros past the edges included
  const auto ap = std::make_unique_for_overwrite<uint32_t[]>(static_cast<size_t>(kBlockTiles * kTileRows * block_pairs));
  const bool a_in_pairs = kernel == Kernel::kAvx512Bf16 && a.dtype == kBFloat16 && a.col_stride == 1 && K % 2 == 0;
  for (int64_t tb = t0; tb < t1; tb += kBlockTiles) {
    const int64_t te = std::min(t1, tb + kBlockTiles);
    const bool direct = a_in_pairs && te * kTileRows <= M;  // whole tiles only
    for (int64_t p0 = 0; p0 < K2; p0 += block_pairs) {
      const int64_t pairs = std::min(block_pairs, K2 - p0);
      const bool last_block = p0 + pairs == K2;
      if (!direct) pack_a_block(ap.get(), a, tb, te, p0, pairs, M, K);
      for (int64_t q = 0; q < panels; ++q) {
        const uint32_t* b_block = bp + (q * K2 + p0) * kTileCols;
        const int64_t cols = std::min(kTileCols, N - q * kTileCols);
        [[maybe_unused]] const float* tile_bias = bias && last_block ? bias + q * kTileCols : nullptr;
        for (int64_t t = tb; t < te; ++t) {
          float* c_tile = c + t * kTileRows * ldc + q * kTileCols;
          const uint32_t* a_tile = ap.get() + (t - tb) * pairs * kTileRows;
          const int64_t rows = std::min(kTileRows, M - t * kTileRows);
#if TG_X86_KERNELS
          if (direct) {
            const RowsOfA a_rows{static_cast<const uint16_t*>(a.data) + t * kTileRows * a.row_stride + 2 * p0,
                                 a.row_stride};
            tile_avx512_bf16_direct(c_tile, ldc, a_rows, b_block, pairs, cols, p0 > 0, tile_bias);
            continue;
          }
          if (kernel == Kernel::kAvx512Bf16) {
            tile_avx512_bf16(c_tile, ldc, a_tile, b_block, pairs, rows, cols, p0 > 0, tile_bias);
            continue;
          }
#endif
          fma(c_tile, ldc, a_tile, b_block, pairs, rows, cols, p0 > 0);
        }
      }
    }
  }
#if TG_X86_KERNELS
  mode.reset();  // linear's float32 add keeps denormals
#endif
  if (bias && kernel == Kernel::kFma) add_bias_rows(c, ldc, bias, t0 * kTileRows, std::min(M, t1 * kTileRows), N);
}

}  // namespace

bool kernel_available(Kernel kernel) {
  return kernel == Kernel::kFma || (isa_available(Isa::kAvx512) && cpu_has_avx512_bf16());
}

Kernel best_kernel() { return kernel_available(Kernel::kAvx512Bf16) ? Kernel::kAvx512Bf16 : Kernel::kFma; }

const char* kernel_name(Kernel kernel) { return kernel == Kernel::kAvx512Bf16 ? "avx512_bf16" : "fma"; }

void gemm(float* c, int64_t ldc, const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, Kernel kernel,
          const float* bias) {
  if (M == 0 || N == 0) return;
  if (K <= 0) {  // the empty sum (+0), plus the bias
    for (int64_t i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, 0.0f);
    if (bias) add_bias_rows(c, ldc, bias, 0, M, N);
    return;
  }
  const int64_t K2 = (K + 1) / 2, panels = (N + kTileCols - 1) / kTileCols;
  const int64_t tiles = (M + kTileRows - 1) / kTileRows;
  // Small products stay on this thread; larger ones split B's packing by panels and the product by
  // row tiles, each range whole tiles (so the split never changes a sum).
  const bool one_thread = M * N * K < kSmallProduct;
  auto split = [&](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (one_thread) fn(0, n);
    else parallel_for(0, n, 1, fn);
  };
  const auto bp = std::make_unique_for_overwrite<uint32_t[]>(static_cast<size_t>(panels * K2 * kTileCols));
  split(panels, [&](int64_t q0, int64_t q1) { pack_b_panels(bp.get(), b, q0, q1, N, K); });
  // the FMA kernel's rule in plain code, where no CPU mode applies it and it can matter
  const bool flush = kernel == Kernel::kFma && !fma_tile_uses_cpu_mode() && sums_may_underflow(a, b, M, N, K);
  split(tiles, [&](int64_t t0, int64_t t1) {
    multiply_row_tiles(c, ldc, a, bp.get(), bias, t0, t1, M, N, K, kernel, flush);
  });
}

}  // namespace tg::kernels::bf16_gemm

#pragma GCC diagnostic pop
