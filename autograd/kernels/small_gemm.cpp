// autograd/kernels/small_gemm.cpp — the register-blocked kernels described in small_gemm.h.
#include "autograd/kernels/small_gemm.h"

#include <algorithm>
#include <vector>

#include "autograd/error.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

#if TG_X86_KERNELS  // the kernels are AVX2 and AVX-512 code: an x86-64 build only (isa.h)
#include <immintrin.h>

#include "autograd/kernels/transpose16x16.h"
#endif

namespace tg::small_gemm {

using kernels::Isa;

namespace {

// Rows of c per block (MR), one broadcast of a per row and k: 6 with AVX2 (12 of its 16
// registers hold sums), 8 with AVX-512 (16 of 32). Eight rows also cut attention's 64 query rows
// into whole blocks, and load b's two vectors once for 16 fmas instead of 12: a third faster
// there than 6 rows (64 x 64 x 256 with a transposed, data in cache, one core).
constexpr int64_t kAvx2Rows = 6, kAvx512Rows = 8, kMaxMR = kAvx512Rows;
constexpr int64_t KC = 256;  // k per pass over a panel: a (256, 32) panel is 32 KiB

#if TG_X86_KERNELS

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

// pack_b for a b whose columns are contiguous (b_rs = 1: a transposed matrix, as attention's
// k^T and v^T), 32-column panels: each 16 columns x 16 k of the panel are 16 contiguous loads,
// transposed in registers into 16 rows of the panel. pack_b reads one float per cache line there
// (b_cs apart), and took a fifth as long as the products it fed (float32 medium GPT's attention).
__attribute__((target("avx512f"))) void pack_b_transposed_32(float* bp, const float* b, int64_t b_cs, int64_t N,
                                                              int64_t K) {
  constexpr int64_t NR = 32;
  for (int64_t j0 = 0; j0 < N; j0 += NR) {
    float* panel = bp + j0 * K;
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
      const int64_t ks = std::min<int64_t>(16, K - k0);
      const __mmask16 k_lanes = static_cast<__mmask16>(ks == 16 ? 0xFFFF : (1u << ks) - 1);
      for (int64_t half = 0; half < NR; half += 16) {
        __m512i rows[16];  // rows[r] = column j0 + half + r of b, k0 .. k0 + 15 (zeros past N and K)
        for (int64_t r = 0; r < 16; ++r) {
          const int64_t j = j0 + half + r;
          rows[r] = j < N ? _mm512_maskz_loadu_epi32(k_lanes, b + j * b_cs + k0) : _mm512_setzero_si512();
        }
        kernels::transpose16x16(rows);  // rows[i] = row k0 + i of the panel's 16 columns
        for (int64_t i = 0; i < ks; ++i) _mm512_storeu_si512(panel + (k0 + i) * NR + half, rows[i]);
      }
    }
  }
}

// An edge block's tile (MR, NR) = c (rows <= MR, cols <= NR), row stride ldc, zero-padded.
void fill_edge(float* tile, const float* c, int64_t ldc, int64_t MR, int64_t NR, int64_t rows, int64_t cols) {
  std::fill(tile, tile + MR * NR, 0.0f);
  for (int64_t r = 0; r < rows; ++r) std::copy(c + r * ldc, c + r * ldc + cols, tile + r * NR);
}

// Where a block's result goes: c (rows <= MR, cols <= NR), row stride ldc. A full block is
// stored straight from the registers; an edge block through `tile`, its valid part copied.
void copy_edge(float* c, int64_t ldc, const float* tile, int64_t NR, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) std::copy(tile + r * NR, tile + r * NR + cols, c + r * ldc);
}

// c (rows, cols) = a's rows (K) @ a b panel (K, 16) whose rows are b_rs apart; with `resume`,
// c += that product, continuing each element's fma chain from its value in c. a_row[r] points
// at row r of a (an edge block repeats its last row: computed, never stored); a_cs steps
// along k. Twelve 8-float accumulators: 6 rows x 2 registers.
__attribute__((target("avx2,fma"))) void block_6x16(float* c, int64_t ldc, bool resume, const float* const* a_row,
                                                 int64_t a_cs, const float* bp, int64_t b_rs, int64_t K,
                                                 int64_t rows, int64_t cols) {
  constexpr int64_t MR = kAvx2Rows;
  const bool full = rows == MR && cols == 16;
  float tile[MR * 16];
  if (resume && !full) fill_edge(tile, c, ldc, MR, 16, rows, cols);
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int64_t r = 0; r < MR; ++r) {
    const float* start = full ? c + r * ldc : tile + r * 16;
    acc[r][0] = resume ? _mm256_loadu_ps(start) : _mm256_setzero_ps();
    acc[r][1] = resume ? _mm256_loadu_ps(start + 8) : _mm256_setzero_ps();
  }
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
#pragma GCC unroll 6
  for (int64_t r = 0; r < MR; ++r) {
    float* dst = full ? c + r * ldc : tile + r * 16;
    _mm256_storeu_ps(dst, acc[r][0]);
    _mm256_storeu_ps(dst + 8, acc[r][1]);
  }
  if (!full) copy_edge(c, ldc, tile, 16, rows, cols);
}

// The same with 16-float registers: a (K, 32) b panel, 8 rows x 2 registers.
__attribute__((target("avx512f"))) void block_8x32(float* c, int64_t ldc, bool resume, const float* const* a_row,
                                                 int64_t a_cs, const float* bp, int64_t b_rs, int64_t K,
                                                 int64_t rows, int64_t cols) {
  constexpr int64_t MR = kAvx512Rows;
  const bool full = rows == MR && cols == 32;
  float tile[MR * 32];
  if (resume && !full) fill_edge(tile, c, ldc, MR, 32, rows, cols);
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int64_t r = 0; r < MR; ++r) {
    const float* start = full ? c + r * ldc : tile + r * 32;
    acc[r][0] = resume ? _mm512_loadu_ps(start) : _mm512_setzero_ps();
    acc[r][1] = resume ? _mm512_loadu_ps(start + 16) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b0 = _mm512_loadu_ps(bp + k * b_rs);
    const __m512 b1 = _mm512_loadu_ps(bp + k * b_rs + 16);
#pragma GCC unroll 8
    for (int64_t r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(a_row[r][k * a_cs]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < MR; ++r) {
    float* dst = full ? c + r * ldc : tile + r * 32;
    _mm512_storeu_ps(dst, acc[r][0]);
    _mm512_storeu_ps(dst + 16, acc[r][1]);
  }
  if (!full) copy_edge(c, ldc, tile, 32, rows, cols);
}

using Block = void (*)(float*, int64_t, bool, const float* const*, int64_t, const float*, int64_t, int64_t, int64_t,
                       int64_t);

// A block kernel and its shape: MR rows of c by NR columns.
struct Kernel {
  Block block;
  int64_t MR, NR;
};

// Rows [row_begin, row_end) of c = the same rows of a @ b, b already in panels of NR columns
// (b_panel(j0) is the panel of columns j0.., its rows panel_rs apart). k runs in blocks of KC,
// each block's panel (KC, NR) staying in the first-level cache while the rows of a stream past
// it; the next block resumes each element's fma chain from c, so the blocks change no bit.
template <class BPanel>
void run_blocks(const Kernel& kernel, float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_cs,
                const BPanel& b_panel, int64_t panel_rs, int64_t row_begin, int64_t row_end, int64_t N, int64_t K) {
  const int64_t MR = kernel.MR, NR = kernel.NR;
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    const int64_t kc = std::min(KC, K - k0);
    for (int64_t j0 = 0; j0 < N; j0 += NR) {
      const float* panel = b_panel(j0) + k0 * panel_rs;
      const int64_t cols = std::min(NR, N - j0);
      for (int64_t i0 = row_begin; i0 < row_end; i0 += MR) {
        const int64_t rows = std::min(MR, row_end - i0);
        const float* a_row[kMaxMR];
        for (int64_t r = 0; r < MR; ++r) a_row[r] = a + (i0 + std::min(r, rows - 1)) * a_rs + k0 * a_cs;
        kernel.block(c + i0 * ldc + j0, ldc, k0 > 0, a_row, a_cs, panel, panel_rs, kc, rows, cols);
      }
    }
  }
}

// c (M, N) = a @ b for columns [0, N) of b: its rows split over the threads (a call from inside a
// parallel_for, as sgemm's split by columns below, runs them on the calling thread). A copy of b
// goes into panels of at most panel_bytes at a time.
void sgemm_columns(const Kernel& kernel, float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_cs,
                   const float* b, int64_t b_rs, int64_t b_cs, int64_t M, int64_t N, int64_t K, Isa isa,
                   int64_t panel_bytes) {
  const int64_t MR = kernel.MR, NR = kernel.NR;
  // b is read in place when its rows are contiguous and cut into whole panels; otherwise it is
  // copied into panels first (into a buffer this thread reuses: attention makes B*NH calls in a
  // row), a band of columns at a time: at most panel_bytes of panels, however wide b is (a
  // language model's head, x @ W^T with W (V, C), would otherwise copy all of W: 593 MiB for
  // Qwen3-0.6B's).
  const bool b_in_place = b_cs == 1 && N % NR == 0;
  const int64_t band_floats = panel_bytes / int64_t{sizeof(float)};
  const int64_t band = b_in_place ? N : std::max(NR, (band_floats / K) / NR * NR);  // columns
  thread_local std::vector<float> b_panels;
  for (int64_t j_band = 0; j_band < N; j_band += band) {
    const int64_t n = std::min(band, N - j_band);
    const float* b_band = b + j_band * b_cs;
    if (!b_in_place) {  // the panels are copied over the threads too, whole panels a chunk
      b_panels.resize(static_cast<size_t>(round_up(n, NR) * K));
      float* panels = b_panels.data();
      parallel_for(0, (n + NR - 1) / NR, work_split::grain_for(NR * K * int64_t{sizeof(float)}),
                   [&](int64_t first, int64_t last) {
                     const int64_t j0 = first * NR, cols = std::min(n, last * NR) - j0;
                     if (isa == Isa::kAvx512 && b_rs == 1) {
                       pack_b_transposed_32(panels + j0 * K, b_band + j0 * b_cs, b_cs, cols, K);
                     } else {
                       pack_b(panels + j0 * K, b_band + j0 * b_cs, b_rs, b_cs, cols, K, NR);
                     }
                   });
    }
    const float* packed = b_panels.data();
    auto b_panel = [&](int64_t j0) { return b_in_place ? b_band + j0 : packed + j0 * K; };
    const int64_t panel_rs = b_in_place ? b_rs : NR;
    // Rows are split over the threads in whole blocks of MR; each element is computed the same
    // way on any thread and in any band, so neither split changes a bit. A chunk gets at least
    // work_split's multiply-adds a thread.
    const int64_t blocks = (M + MR - 1) / MR;
    const int64_t grain = work_split::grain_for_macs(MR * n * K);
    parallel_for(0, blocks, grain, [&](int64_t first, int64_t last) {
      run_blocks(kernel, c + j_band, ldc, a, a_rs, a_cs, b_panel, panel_rs, first * MR, std::min(M, last * MR), n, K);
    });
  }
}

#endif  // TG_X86_KERNELS

}  // namespace

// The crossover, measured on one core against BLIS's skx kernels (docs/performance.md): below
// 128^3 multiply-adds BLIS's fixed cost per call dominates, for either kernel here. Above, the
// AVX-512 kernel wins while a block of a (M rows, 256 of k) stays in the second-level cache as
// the panels of b go by: K <= 256, or a itself under 1 MiB. Beyond that, BLIS's blocking for
// every level of cache wins.
bool worth_it(int64_t M, int64_t N, int64_t K) {
  const Isa isa = best_isa_for(N);
  if (isa == Isa::kPortable) return false;
  if (M * N * K <= 128 * 128 * 128) return true;
  if (isa != Isa::kAvx512) return false;
  return K <= KC || M * K <= (int64_t{1} << 18);
}

Isa best_isa_for(int64_t N) {
  const Isa best = kernels::best_isa();
  return best == Isa::kAvx512 && N < 32 ? Isa::kAvx2 : best;
}

void sgemm(float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs,
           int64_t b_cs, int64_t M, int64_t N, int64_t K, Isa isa) {
#if !TG_X86_KERNELS
  throw Error("small_gemm::sgemm: no kernel in this build (" + std::string(kernels::isa_name(isa)) +
              "): worth_it is false without AVX2");
#else
  const Kernel kernel = isa == Isa::kAvx512 ? Kernel{block_8x32, kAvx512Rows, 32} : Kernel{block_6x16, kAvx2Rows, 16};
  const int64_t MR = kernel.MR, NR = kernel.NR;
  // Fewer blocks of rows than threads (a decode step of a batch of 5 to 8 sequences is one block;
  // with 16 threads, anything up to 120 rows leaves threads without a block): the columns are
  // split instead, in whole panels, and each thread copies and multiplies its own, the 16 MiB
  // of panels shared out among them. Each element is the same fma chain wherever its panel
  // falls, so this split changes no bit either.
  constexpr int64_t kPanelBytes = int64_t{1} << 24;
  const int64_t blocks = (M + MR - 1) / MR, panels = (N + NR - 1) / NR;
  const int threads = get_num_threads();
  if (blocks < threads && panels > 1) {
    const int64_t grain = work_split::grain_for_macs(round_up(M, MR) * NR * K);
    parallel_for(0, panels, grain, [&](int64_t first, int64_t last) {
      const int64_t j0 = first * NR, j1 = std::min(N, last * NR);
      sgemm_columns(kernel, c + j0, ldc, a, a_rs, a_cs, b + j0 * b_cs, b_rs, b_cs, M, j1 - j0, K, isa,
                    kPanelBytes / threads);
    });
    return;
  }
  sgemm_columns(kernel, c, ldc, a, a_rs, a_cs, b, b_rs, b_cs, M, N, K, isa, kPanelBytes);
#endif
}

}  // namespace tg::small_gemm
