// autograd/ops/small_gemm.cpp — the register-blocked kernels described in small_gemm.h.
#include "autograd/ops/small_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "autograd/parallel.h"

namespace tg::small_gemm {

namespace {

constexpr int64_t MR = 6;  // rows of c per block: one broadcast of a per row and k

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// bp (K, N rounded up to NR): panel q holds columns q*NR .. q*NR+NR-1 as a (K, NR) row-major
// block, columns past N zero.
void pack_b(float* bp, const float* b, int64_t b_rs, int64_t b_cs, int64_t N, int64_t K, int64_t NR) {
  for (int64_t j0 = 0; j0 < N; j0 += NR) {
    float* panel = bp + j0 * K;
    const int64_t cols = std::min(NR, N - j0);
    for (int64_t k = 0; k < K; ++k) {
      const float* row = b + k * b_rs + j0 * b_cs;
      for (int64_t j = 0; j < NR; ++j) panel[k * NR + j] = j < cols ? row[j * b_cs] : 0.0f;
    }
  }
}

// Where a block's result goes: c (rows <= MR, cols <= NR), row stride ldc. A full block is
// stored straight from the registers; an edge block through `tile`, its valid part copied.
void copy_edge(float* c, int64_t ldc, const float* tile, int64_t NR, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::copy(tile + r * NR, tile + r * NR + cols, c + r * ldc);
}

// c (rows, cols) = a's rows (K) @ a b panel (K, 16) whose rows are b_rs apart. a_row[r] points
// at row r of a (an edge block repeats its last row: computed, never stored); a_cs steps along
// k. Twelve 8-float accumulators: 6 rows x 2 registers.
__attribute__((target("avx2,fma"))) void block_6x16(float* c, int64_t ldc, const float* const* a_row, int64_t a_cs,
                                                    const float* bp, int64_t b_rs, int64_t K, int64_t rows,
                                                    int64_t cols) {
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int64_t r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(bp + k * b_rs);
    const __m256 b1 = _mm256_loadu_ps(bp + k * b_rs + 8);
#pragma GCC unroll 6
    for (int64_t r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(a_row[r] + k * a_cs);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const bool full = rows == MR && cols == 16;
  float tile[MR * 16];
#pragma GCC unroll 6
  for (int64_t r = 0; r < MR; ++r) {
    float* dst = full ? c + r * ldc : tile + r * 16;
    _mm256_storeu_ps(dst, acc[r][0]);
    _mm256_storeu_ps(dst + 8, acc[r][1]);
  }
  if (!full) copy_edge(c, ldc, tile, 16, rows, cols);
}

// The same with 16-float registers: a (K, 32) b panel, 6 rows x 2 registers.
__attribute__((target("avx512f"))) void block_6x32(float* c, int64_t ldc, const float* const* a_row, int64_t a_cs,
                                                   const float* bp, int64_t b_rs, int64_t K, int64_t rows,
                                                   int64_t cols) {
  __m512 acc[MR][2];
#pragma GCC unroll 6
  for (int64_t r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_loadu_ps(bp + k * b_rs);
    const __m512 b1 = _mm512_loadu_ps(bp + k * b_rs + 16);
#pragma GCC unroll 6
    for (int64_t r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(a_row[r][k * a_cs]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const bool full = rows == MR && cols == 32;
  float tile[MR * 32];
#pragma GCC unroll 6
  for (int64_t r = 0; r < MR; ++r) {
    float* dst = full ? c + r * ldc : tile + r * 32;
    _mm512_storeu_ps(dst, acc[r][0]);
    _mm512_storeu_ps(dst + 16, acc[r][1]);
  }
  if (!full) copy_edge(c, ldc, tile, 32, rows, cols);
}

using Block = void (*)(float*, int64_t, const float* const*, int64_t, const float*, int64_t, int64_t, int64_t,
                       int64_t);

// Rows [row_begin, row_end) of c = the same rows of a @ b, b already in panels of NR columns
// (b_panel(j0) is the panel of columns j0.., its rows panel_rs apart). Panel by panel, so one
// (K, NR) panel stays in cache while the rows of a stream past it.
template <class BPanel>
void run_blocks(Block block, int64_t NR, float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_cs,
                const BPanel& b_panel, int64_t panel_rs, int64_t row_begin, int64_t row_end, int64_t N, int64_t K) {
  for (int64_t j0 = 0; j0 < N; j0 += NR) {
    const float* panel = b_panel(j0);
    const int64_t cols = std::min(NR, N - j0);
    for (int64_t i0 = row_begin; i0 < row_end; i0 += MR) {
      const int64_t rows = std::min(MR, row_end - i0);
      const float* a_row[MR];
      for (int64_t r = 0; r < MR; ++r) a_row[r] = a + (i0 + std::min(r, rows - 1)) * a_rs;
      block(c + i0 * ldc + j0, ldc, a_row, a_cs, panel, panel_rs, K, rows, cols);
    }
  }
}

}  // namespace

bool kernel_available(Kernel kernel) {
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider registers.
  if (kernel == Kernel::kAvx512) return __builtin_cpu_supports("avx512f");
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool available() {
  static const bool ok = kernel_available(Kernel::kAvx2);
  return ok;
}

// Measured on one core of an AVX-512 server against BLIS 0.9's skx kernels (GFLOP/s, BLIS / here):
//   64x16 @ 16x64 14 / 100,  128x32 @ 32x128 68 / 139,  1024x64 @ 64x64 124 / 206,
//   2048x128 @ 128x128 180 / 214,  2048x128 @ 128x512 172 / 186,  512x512 @ 512x512 183 / 137.
// Below 128^3 multiply-adds BLIS's fixed cost per call dominates, for either kernel here. Above,
// the AVX-512 kernel still wins while a panel of b (K x 32) stays in the first-level caches;
// from K = 512 on, BLIS's blocking for the caches wins.
bool worth_it(int64_t M, int64_t N, int64_t K) {
  if (M * N * K <= 128 * 128 * 128) return true;
  return best_kernel(N) == Kernel::kAvx512 && K <= 256;
}

Kernel best_kernel(int64_t N) {
  static const bool avx512 = kernel_available(Kernel::kAvx512);
  return avx512 && N >= 32 ? Kernel::kAvx512 : Kernel::kAvx2;
}

void sgemm(float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs,
           int64_t b_cs, int64_t M, int64_t N, int64_t K, Kernel kernel) {
  const Block block = kernel == Kernel::kAvx512 ? block_6x32 : block_6x16;
  const int64_t NR = kernel == Kernel::kAvx512 ? 32 : 16;
  // b is read in place when its rows are contiguous and cut into whole panels; otherwise it is
  // copied into panels first (into a buffer this thread reuses: attention makes B*NH calls in a
  // row).
  const bool b_in_place = b_cs == 1 && N % NR == 0;
  thread_local std::vector<float> b_panels;
  if (!b_in_place) {
    b_panels.resize(static_cast<size_t>(round_up(N, NR) * K));
    pack_b(b_panels.data(), b, b_rs, b_cs, N, K, NR);
  }
  const float* packed = b_panels.data();
  auto b_panel = [&](int64_t j0) { return b_in_place ? b + j0 : packed + j0 * K; };
  const int64_t panel_rs = b_in_place ? b_rs : NR;
  // Rows are split over the threads in whole blocks of MR; each element is computed the same way
  // on any thread, so the split changes no bit. A chunk gets at least ~256k multiply-adds.
  const int64_t blocks = (M + MR - 1) / MR;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / (MR * N * K));
  parallel_for(0, blocks, grain, [&](int64_t first, int64_t last) {
    run_blocks(block, NR, c, ldc, a, a_rs, a_cs, b_panel, panel_rs, first * MR, std::min(M, last * MR), N, K);
  });
}

}  // namespace tg::small_gemm
