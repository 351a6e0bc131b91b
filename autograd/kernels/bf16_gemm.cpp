// autograd/kernels/bf16_gemm.cpp — bfloat16 products with float32 sums (see bf16_gemm.h).
//
// Both kernels read the same packed operands: bfloat16 pairs along k, one 32-bit word per pair,
// the even k in the low half and the odd k in the high half (vdpbf16ps's layout):
//   A packed: ap[i * K2 + p]               = a[i][2p] | a[i][2p+1] << 16        (M, K2)
//   B packed: bp[(q * K2 + p) * 32 + j]    = b[2p][32q+j] | b[2p+1][32q+j] << 16 (panels of 32 cols)
// with K2 = ceil(K / 2) and zeros past K and past N. A tile is up to 6 rows by one 32-column panel:
// its 6 x 32 sums stay in registers while p runs over K2.
#include "autograd/kernels/bf16_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/kernels/isa.h"
#include "autograd/runtime/parallel.h"

namespace tg::kernels::bf16_gemm {

namespace {

constexpr int64_t kRows = 6;   // MR: rows of A per tile
constexpr int64_t kCols = 32;  // NR: columns per panel (two vectors of 16 floats)

// Element (i, j) of an operand as bfloat16 bits: a float32 rounded to nearest even, a bfloat16 as it is.
uint32_t bits_at(const Operand& m, int64_t i, int64_t j) {
  const int64_t at = i * m.row_stride + j * m.col_stride;
  if (m.dtype == kBFloat16) return static_cast<const BFloat16*>(m.data)[at].bits;
  return BFloat16(static_cast<const float*>(m.data)[at]).bits;
}

// The word of k-pair p: element k = 2p in the low half, k = 2p + 1 (or a zero past K) in the high.
uint32_t pair_along_k(const Operand& m, bool k_is_row, int64_t other, int64_t p, int64_t K) {
  auto at = [&](int64_t k) { return k_is_row ? bits_at(m, k, other) : bits_at(m, other, k); };
  return at(2 * p) | (2 * p + 1 < K ? at(2 * p + 1) << 16 : 0u);
}

// (M, K2) words of A's bfloat16 pairs.
std::vector<uint32_t> pack_a(const Operand& a, int64_t M, int64_t K) {
  const int64_t K2 = (K + 1) / 2;
  std::vector<uint32_t> ap(static_cast<size_t>(M * K2));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t p = 0; p < K2; ++p) ap[static_cast<size_t>(i * K2 + p)] = pair_along_k(a, false, i, p, K);
  return ap;
}

// (panels, K2, 32) words of B's bfloat16 pairs, zeros past N.
std::vector<uint32_t> pack_b(const Operand& b, int64_t N, int64_t K) {
  const int64_t K2 = (K + 1) / 2, panels = (N + kCols - 1) / kCols;
  std::vector<uint32_t> bp(static_cast<size_t>(panels * K2 * kCols), 0);
  for (int64_t q = 0; q < panels; ++q)
    for (int64_t p = 0; p < K2; ++p)
      for (int64_t j = 0; j < kCols && q * kCols + j < N; ++j)
        bp[static_cast<size_t>((q * K2 + p) * kCols + j)] = pair_along_k(b, true, q * kCols + j, p, K);
  return bp;
}

// --- kAvx512Bf16: vdpbf16ps ----------------------------------------------------------------------

template <int R>
[[gnu::target("avx512f,avx512bf16")]] void tile_avx512_bf16(float* c, int64_t ldc, const uint32_t* ap, int64_t K2,
                                                             const uint32_t* bp, int64_t cols) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < K2; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + p * kCols);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + p * kCols + 16);
    for (int r = 0; r < R; ++r) {
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[r * K2 + p]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
  }
  const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, acc[r][0]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc[r][1]);
  }
}

// --- kFma: the same sums on float32 fused multiply-adds ------------------------------------------

float low_half(uint32_t w) { return std::bit_cast<float>(w << 16); }            // the even k's bfloat16
float high_half(uint32_t w) { return std::bit_cast<float>(w & 0xFFFF0000u); }  // the odd k's

// c += a_odd * b_odd, then c += a_even * b_even, for every lane: vdpbf16ps's order.
template <int R>
[[gnu::always_inline]] inline void tile_fma_body(float* c, int64_t ldc, const uint32_t* ap, int64_t K2,
                                                 const uint32_t* bp, int64_t cols) {
  float acc[R][kCols] = {};
  for (int64_t p = 0; p < K2; ++p) {
    float b_even[kCols], b_odd[kCols];
    for (int64_t j = 0; j < kCols; ++j) {
      b_even[j] = low_half(bp[p * kCols + j]);
      b_odd[j] = high_half(bp[p * kCols + j]);
    }
    for (int r = 0; r < R; ++r) {
      const float a_even = low_half(ap[r * K2 + p]), a_odd = high_half(ap[r * K2 + p]);
      for (int64_t j = 0; j < kCols; ++j) {
        acc[r][j] = std::fma(a_odd, b_odd[j], acc[r][j]);
        acc[r][j] = std::fma(a_even, b_even[j], acc[r][j]);
      }
    }
  }
  for (int r = 0; r < R; ++r) std::copy(acc[r], acc[r] + cols, c + r * ldc);
}

template <int R>
[[gnu::target("avx2,fma")]] void tile_fma_avx2(float* c, int64_t ldc, const uint32_t* ap, int64_t K2,
                                               const uint32_t* bp, int64_t cols) {
  tile_fma_body<R>(c, ldc, ap, K2, bp, cols);
}

template <int R>
void tile_fma_baseline(float* c, int64_t ldc, const uint32_t* ap, int64_t K2, const uint32_t* bp, int64_t cols) {
  tile_fma_body<R>(c, ldc, ap, K2, bp, cols);
}

// Denormal inputs read as zero (DAZ) and denormal results written as zero (FTZ) while the FMA
// kernel runs, as vdpbf16ps always does; the thread's previous mode comes back afterwards.
class FlushDenormals {
 public:
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~FlushDenormals() { _mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_;
};

using Tile = void (*)(float*, int64_t, const uint32_t*, int64_t, const uint32_t*, int64_t);

template <template <int> class Pick>
Tile tile_for_rows(int64_t rows) {
  switch (rows) {
    case 1: return Pick<1>::tile;
    case 2: return Pick<2>::tile;
    case 3: return Pick<3>::tile;
    case 4: return Pick<4>::tile;
    case 5: return Pick<5>::tile;
    default: return Pick<6>::tile;
  }
}
template <int R> struct Bf16Tile { static constexpr Tile tile = tile_avx512_bf16<R>; };
template <int R> struct FmaAvx2Tile { static constexpr Tile tile = tile_fma_avx2<R>; };
template <int R> struct FmaBaselineTile { static constexpr Tile tile = tile_fma_baseline<R>; };

Tile tile_of(Kernel kernel, int64_t rows) {
  if (kernel == Kernel::kAvx512Bf16) return tile_for_rows<Bf16Tile>(rows);
  if (isa_available(Isa::kAvx2)) return tile_for_rows<FmaAvx2Tile>(rows);
  return tile_for_rows<FmaBaselineTile>(rows);
}

}  // namespace

bool kernel_available(Kernel kernel) {
  return kernel == Kernel::kFma || (isa_available(Isa::kAvx512) && cpu_has_avx512_bf16());
}

Kernel best_kernel() { return kernel_available(Kernel::kAvx512Bf16) ? Kernel::kAvx512Bf16 : Kernel::kFma; }

const char* kernel_name(Kernel kernel) { return kernel == Kernel::kAvx512Bf16 ? "avx512_bf16" : "fma"; }

void gemm(float* c, int64_t ldc, const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, Kernel kernel) {
  if (M == 0 || N == 0) return;
  const int64_t K2 = (K + 1) / 2, panels = (N + kCols - 1) / kCols;
  const std::vector<uint32_t> ap = pack_a(a, M, K), bp = pack_b(b, N, K);
  parallel_for(0, panels, 1, [&](int64_t first, int64_t last) {
    std::optional<FlushDenormals> flush;
    if (kernel == Kernel::kFma) flush.emplace();
    for (int64_t q = first; q < last; ++q) {
      const int64_t cols = std::min(kCols, N - q * kCols);
      for (int64_t i = 0; i < M; i += kRows) {
        const int64_t rows = std::min(kRows, M - i);
        tile_of(kernel, rows)(c + i * ldc + q * kCols, ldc, ap.data() + i * K2, K2, bp.data() + q * K2 * kCols, cols);
      }
    }
  });
}

}  // namespace tg::kernels::bf16_gemm
