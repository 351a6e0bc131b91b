// autograd/kernels/gemm.cpp — matmul's fast path (see gemm.h): BLIS's layout rules, its calls,
// and the choice between gemv, small_gemm and gemm for each product of a batch.
#include "autograd/kernels/gemm.h"

#include <blis.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/internal.h"
#include "autograd/kernels/bf16_gemm.h"
#include "autograd/kernels/gemv.h"
#include "autograd/kernels/small_gemm.h"
#include "autograd/loops.h"
#include "autograd/runtime/environment.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

namespace tg::kernels {

namespace {

thread_local GemmCall last_call;

// The bfloat16 kernel matmul uses: the best this CPU has, unless TG_BF16_KERNEL names one
// (avx512_bf16 or fma; a kernel this CPU cannot run is an Error, as set_bf16_kernel's).
bf16_gemm::Kernel initial_bf16_kernel() {
  const std::optional<std::string> asked = environment_choice("TG_BF16_KERNEL", {"avx512_bf16", "fma"});
  if (!asked) return bf16_gemm::best_kernel();
  const bf16_gemm::Kernel kernel = *asked == "fma" ? bf16_gemm::Kernel::kFma : bf16_gemm::Kernel::kAvx512Bf16;
  if (!bf16_gemm::kernel_available(kernel)) {
    throw Error("TG_BF16_KERNEL=" + *asked + ": this CPU cannot run that kernel (it has no AVX512_BF16); use fma");
  }
  return kernel;
}
// Read on first use (the first bfloat16 product), so a bad TG_BF16_KERNEL throws to that caller.
std::atomic<bf16_gemm::Kernel>& bf16_kernel_in_use() {
  static std::atomic<bf16_gemm::Kernel> kernel{initial_bf16_kernel()};
  return kernel;
}

// One matrix as BLIS reads it: element (i, j) at p[i*rs + j*cs].
struct MatrixLayout {
  int64_t rows, cols, rs, cs;
};

// The last two dims of t.
MatrixLayout matrix_layout(const Tensor& t) {
  const int64_t n = t.dim();
  MatrixLayout l{t.sizes()[n - 2], t.sizes()[n - 1], t.strides()[n - 2], t.strides()[n - 1]};
  // A size-1 dim is never stepped along, so its stride is free; views leave arbitrary values
  // there, which BLIS's checks below may reject. Pick one they accept.
  if (l.rows == 1 && l.cols == 1) {
    l.rs = l.cs = 1;
  } else if (l.rows == 1) {
    l.rs = l.cols * l.cs;
  } else if (l.cols == 1) {
    l.cs = l.rows * l.rs;
  }
  return l;
}

// Can BLIS's gemm read this matrix in place? BLIS checks every operand's strides and aborts the
// program when they break its rules, so we check first and copy instead. Its rules:
//   - no stride may be 0: a broadcast (expanded) matrix must be materialised;
//   - row-major (cs == 1) needs rs >= cols, column-major (rs == 1) needs cs >= rows;
//   - rs == cs (1 or not) only for a single row or column;
//   - general stride (neither is 1): the dim with the smaller stride must fit inside the larger
//     stride (rows*rs <= cs, or cols*cs <= rs), so rows and columns never interleave.
// Transposes, permutes, selects and slices (even x[:, ::2], strides (C,2)) of a dense tensor
// always pass, so in practice only expanded matrices are copied. We also refuse negative
// strides (tapegrad makes none). Empty matrices never reach BLIS.
bool blis_can_read(const MatrixLayout& l) {
  if (l.rs <= 0 || l.cs <= 0) return false;
  if (l.rs == l.cs) return l.rows == 1 || l.cols == 1;
  if (l.cs == 1) return l.rs >= l.cols;
  if (l.rs == 1) return l.cs >= l.rows;
  return l.rs < l.cs ? l.rows * l.rs <= l.cs : l.cols * l.cs <= l.rs;
}

// t itself when BLIS can read its matrices in place, else a contiguous copy (without the tape).
Tensor blis_operand(const Tensor& t) {
  if (blis_can_read(matrix_layout(t))) return t;
  return t.detach().contiguous();
}

// Small products run on one thread. BLIS's OpenMP threads cost a fork/join per call, and when
// the cores are already busy (ctest -j, or our own parallel_for) they spin-wait for each other:
// measured, a 64x64x64 gemm went from microseconds to milliseconds. Below about 128^3
// multiply-adds one core is as fast anyway.
constexpr int64_t kSingleThreadWork = 128 * 128 * 128;

// A BLIS runtime object asking for one thread, or null (= BLIS's global thread setting).
// bli_rntm_init_from_global and bli_rntm_set_num_threads are the calls BLIS 0.9, 1.x and 2.0
// share (1.0 made bli_rntm_init the library's own start-up, without an argument).
rntm_t* runtime_for(int64_t M, int64_t N, int64_t K, rntm_t* single) {
  if (M * N * K > kSingleThreadWork) return nullptr;
  bli_rntm_init_from_global(single);
  bli_rntm_set_num_threads(1, single);
  return single;
}

void blis_gemm(float* c, int64_t ldc, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
               const MatrixLayout& la, const MatrixLayout& lb) {
  float one = 1.0f, zero = 0.0f;  // BLIS takes alpha and beta by pointer
  rntm_t single;
  // BLIS's pointers are not const, but it only reads a and b.
  bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one, const_cast<float*>(a), la.rs, la.cs,
               const_cast<float*>(b), lb.rs, lb.cs, &zero, c, ldc, 1, nullptr, runtime_for(M, N, K, &single));
}

void blis_gemm(double* c, int64_t ldc, const double* a, const double* b, int64_t M, int64_t N, int64_t K,
               const MatrixLayout& la, const MatrixLayout& lb) {
  double one = 1.0, zero = 0.0;
  rntm_t single;
  bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, M, N, K, &one, const_cast<double*>(a), la.rs, la.cs,
               const_cast<double*>(b), lb.rs, lb.cs, &zero, c, ldc, 1, nullptr, runtime_for(M, N, K, &single));
}

// y (m) = A (m,n) @ x (n), A element (i, j) at a[i*rsa + j*csa], x's at x[j*incx], y's at
// y[i*incy]. y is zeroed first, so with beta = 0 nothing of what was there can reach the result.
void blis_gemv(float* y, int64_t incy, const float* a, const float* x, int64_t m, int64_t n, int64_t rsa, int64_t csa,
               int64_t incx) {
  float one = 1.0f, zero = 0.0f;
  for (int64_t i = 0; i < m; ++i) y[i * incy] = 0.0f;
  bli_sgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, m, n, &one, const_cast<float*>(a), rsa, csa, const_cast<float*>(x),
            incx, &zero, y, incy);
}

void blis_gemv(double* y, int64_t incy, const double* a, const double* x, int64_t m, int64_t n, int64_t rsa,
               int64_t csa, int64_t incx) {
  double one = 1.0, zero = 0.0;
  for (int64_t i = 0; i < m; ++i) y[i * incy] = 0.0;
  bli_dgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, m, n, &one, const_cast<double*>(a), rsa, csa,
            const_cast<double*>(x), incx, &zero, y, incy);
}

// The same product, float32: gemv.h's row-by-row kernel when A's rows and x are contiguous (a
// weight (out, in) times one token), else BLIS's. float64 stays with BLIS.
void gemv(float* y, int64_t incy, const float* a, const float* x, int64_t m, int64_t n, int64_t rsa, int64_t csa,
          int64_t incx) {
  if (csa == 1 && incx == 1) return tg::gemv::sgemv_rows(y, incy, a, rsa, x, m, n);
  blis_gemv(y, incy, a, x, m, n, rsa, csa, incx);
}
void gemv(double* y, int64_t incy, const double* a, const double* x, int64_t m, int64_t n, int64_t rsa, int64_t csa,
          int64_t incx) {
  blis_gemv(y, incy, a, x, m, n, rsa, csa, incx);
}

// b (K, N) stored by columns (rs = 1) with few rows: a transposed view such as a LoRA's B^T,
// (r, out) for rank r. BLIS multiplies by such a b slowly: several times slower than by the same b
// stored by rows for K up to 64, as fast at K = 128 (measured in docs/performance.md). Copying b
// into row-major order costs K * N elements, 1/M of the product's work, so up to this K such a b
// is copied first, into a 64-byte-aligned buffer: BLIS read an unaligned copy almost as slowly as
// the view.
constexpr int64_t kCopyColumnStoredBUpToK = 64;

template <class T>
void blis_gemm_with_row_major_b(T* c, int64_t ldc, const T* a, const T* b, int64_t M, int64_t N, int64_t K,
                                const MatrixLayout& la, const MatrixLayout& lb) {
  thread_local std::vector<T> buffer;  // each thread (run_batches) has its own
  buffer.resize(static_cast<size_t>(K * N) + 64 / sizeof(T));
  T* rows = buffer.data();  // b (K, N), row-major, 64-byte aligned (as a tensor's buffer)
  while (reinterpret_cast<uintptr_t>(rows) % 64 != 0) ++rows;
  // 16 columns of b at a time (at most 16 * 64 elements: they stay in the L1 cache while their
  // K elements go to K rows)
  constexpr int64_t kColumns = 16;
  for (int64_t j0 = 0; j0 < N; j0 += kColumns) {
    const int64_t width = std::min(kColumns, N - j0);
    for (int64_t k = 0; k < K; ++k) {
      const T* from = b + k * lb.rs + j0 * lb.cs;  // b[k, j0 ..]
      T* to = rows + k * N + j0;                    // rows[k, j0 ..]
      for (int64_t j = 0; j < width; ++j) to[j] = from[j * lb.cs];
    }
  }
  blis_gemm(c, ldc, a, rows, M, N, K, la, MatrixLayout{K, N, N, 1});
}

// A few rows times a large weight read transposed (x @ w^T, w (N, K) with contiguous rows): one
// decode step of a batch of M sequences. small_gemm would copy the whole of w into panels for M
// uses of each element; gemv.h's kernel for several vectors reads w once, in place. For 2 to 4
// rows it is the faster one from a 1 MiB weight on; below that the weight is in the cache and
// small_gemm's register blocks win, and from 6 rows on small_gemm catches up (measured in
// docs/performance.md).
constexpr int64_t kManyVectorsUpToRows = 4;
constexpr int64_t kManyVectorsFromBytes = int64_t{1} << 20;

bool few_rows_times_big_weight(int64_t M, int64_t N, int64_t K, const MatrixLayout& la, const MatrixLayout& lb) {
  return M <= kManyVectorsUpToRows && la.cs == 1 && lb.rs == 1 &&
         N * K * int64_t{sizeof(float)} >= kManyVectorsFromBytes;
}

// c (M,N) row-major, row i at c + i * ldc, = a (M,K) @ b (K,N), a and b read through their layouts.
// beta = 0 makes BLIS overwrite c without reading it, so c may be uninitialised.
//
// One row (M = 1: a linear layer on one token, an attention query while generating) or one
// column (N = 1) is a matrix-vector product. A gemm (BLIS's, or small_gemm's for a weight read
// transposed) would pack the whole matrix into its blocked layout first, for one use of each
// element: the copy costs more than the product, and generation with the KV cache is all such
// products. gemv reads the matrix in place (gemv.h's kernel when its rows are contiguous, as a
// weight's are for x @ w^T; BLIS's otherwise):
//   M = 1   c (N)  = b^T (N,K) @ a (K)
//   N = 1   c (M)  = a (M,K)   @ b (K)
// The general gemm stays the path for everything else (and matmul_reference the test oracle).
// BLIS's gemv runs on the calling thread (BLIS does not thread level-2 products). gemv.h's cuts a
// matrix into bands of whole rows, one a thread, each at least work_split.h's bytes a thread: a
// smaller matrix (every weight of the small config, 262 kB at most) runs on the calling thread,
// where a wake-up would cost more than the second core's share of the memory's bandwidth gives back.
template <class T>
void gemm(T* c, int64_t ldc, const T* a, const T* b, int64_t M, int64_t N, int64_t K, const MatrixLayout& la,
          const MatrixLayout& lb) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: zeros (BLIS would do the same; we need not ask it)
    for (int64_t i = 0; i < M; ++i) std::fill(c + i * ldc, c + i * ldc + N, T(0));
    return;
  }
  if (M == 1) return gemv(c, 1, b, a, N, K, lb.cs, lb.rs, la.cs);
  if (N == 1) return gemv(c, ldc, a, b, M, K, la.rs, la.cs, lb.rs);
  if constexpr (std::is_same_v<T, float>) {
    if (few_rows_times_big_weight(M, N, K, la, lb)) {
      return gemv::sgemv_rows_many(c, ldc, 1, b, lb.cs, a, la.rs, M, N, K);  // c^T (N, M) = b^T (N, K) @ a^T
    }
    if (small_gemm::worth_it(M, N, K)) {
      small_gemm::sgemm(c, ldc, a, la.rs, la.cs, b, lb.rs, lb.cs, M, N, K, small_gemm::best_isa_for(N));
      return;
    }
  }
  if (lb.rs == 1 && lb.cs != 1 && K <= kCopyColumnStoredBUpToK)
    return blis_gemm_with_row_major_b(c, ldc, a, b, M, N, K, la, lb);
  blis_gemm(c, ldc, a, b, M, N, K, la, lb);
}

// --- a float32 a times a weight in fewer bits: widened (bfloat16) or dequantized (int8) as read ----
//
// A frozen weight kept in its checkpoint's bfloat16 or float16 (ops/matmul.cpp says when), or quantized to
// int8 with a scale per group (ops/quantize.cpp), is made float32 as it is read. Widening is exact,
// and dequantizing rounds each element once, to the value dequantize_int8 gives it; so this product
// gives the bits the float32 gemm above gives the widened (dequantized) weight: each case runs that
// gemm's kernel for the shape, on b as it can read it.
//   one row times w^T (a token)     gemv.h's row kernel, which widens each element as it reads it:
//   2 to 4 rows times a big w^T     a token's time is the weight's bytes, and they are halved (a
//                                   bit over a quarter for int8)
//   small_gemm's products           small_gemm on bands of b's columns widened into a buffer of at
//                                   most kWidenedBandBytes (each element of c is one fma chain
//                                   wherever its band falls: small_gemm.h)
//   the rest (BLIS's)               b widened whole into a buffer, then the float32 gemm: BLIS picks
//                                   its kernels and blocking from the shape and the layout it is
//                                   given, so only the same call is sure to give the same bits.
//                                   Past kWidenedWholeBytes (a vocabulary-wide head times a prompt of
//                                   hundreds of rows, or its gradient in training), b is widened
//                                   and multiplied in bands of columns of at most that size: BLIS
//                                   then runs one call a band, whose sums are the whole call's up
//                                   to BLIS's choice of kernel for the narrower shape (rounding).
// The buffers are each thread's own and kept: a prompt's or a training step's products widen
// the same weights again and again, and fresh pages for each would cost more than the widening.
constexpr int64_t kWidenedBandBytes = int64_t{4} << 20;
constexpr int64_t kWidenedWholeBytes = int64_t{32} << 20;

// b (K, N), bfloat16 or float16 (W), read through its layout.
template <class W>
struct SixteenBitWeight {
  const W* b;
  MatrixLayout lb;

  // Its rows are a weight's (out, in) rows when b is stored by columns (b = w^T).
  bool rows_contiguous() const { return lb.rs == 1; }
  // c[r * ldc + j] = a_r . column j of b, for R rows of a (la.rs apart): gemv.h's row kernel
  void rows_times(float* c, int64_t ldc, const float* a, int64_t lda, int64_t R) const {
    if (R == 1) return gemv::sgemv_rows(c, 1, b, lb.cs, a, lb.cols, lb.rows);
    gemv::sgemv_rows_many(c, ldc, 1, b, lb.cs, a, lda, R, lb.cols, lb.rows);
  }
  // Columns [j0, j0 + n) widened into `to`, in b's orientation: stored by columns (rs = 1, as a
  // weight's w^T: each of its rows one column) stays stored by columns, anything else becomes
  // row-major; each line of `to` is read and written front to back. Returns the copy's layout.
  MatrixLayout widen(std::vector<float>& to, int64_t j0, int64_t n) const {
    const int64_t K = lb.rows;
    to.resize(static_cast<size_t>(K * n));
    const bool by_columns = lb.rs == 1 && lb.cs != 1;
    const MatrixLayout out = by_columns ? MatrixLayout{K, n, 1, K} : MatrixLayout{K, n, n, 1};
    const int64_t lines = by_columns ? n : K, length = by_columns ? K : n;  // each line contiguous in `to`
    const int64_t line_step = by_columns ? lb.cs : lb.rs, element_step = by_columns ? lb.rs : lb.cs;
    const W* from = b + j0 * lb.cs;
    parallel_for(0, lines, work_split::grain_for(length * int64_t{sizeof(float)}), [&](int64_t first, int64_t last) {
      for (int64_t l = first; l < last; ++l)
        for (int64_t e = 0; e < length; ++e) to[l * length + e] = static_cast<float>(from[l * line_step + e * element_step]);
    });
    return out;
  }
};

// b (K, N) = w^T for an int8 weight w (N, K) with its scales (gemv.h: Int8Matrix).
struct Int8Weight {
  gemv::Int8Matrix w;
  int64_t K, N;

  bool rows_contiguous() const { return true; }
  void rows_times(float* c, int64_t ldc, const float* a, int64_t lda, int64_t R) const {
    gemv::sgemv_rows_many(c, ldc, 1, w, a, lda, R, N, K);
  }
  // Rows [j0, j0 + n) of w dequantized into `to` (n, K): b's columns, stored by columns.
  MatrixLayout widen(std::vector<float>& to, int64_t j0, int64_t n) const {
    to.resize(static_cast<size_t>(K * n));
    const int64_t groups = K / w.group;
    parallel_for(0, n, work_split::grain_for(K * int64_t{sizeof(float)}), [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const int8_t* q = w.values + (j0 + i) * K;
        const float* scale = w.scales + (j0 + i) * groups;
        for (int64_t g = 0; g < groups; ++g)  // each group's elements times its scale
          for (int64_t k = g * w.group; k < (g + 1) * w.group; ++k) to[i * K + k] = static_cast<float>(q[k]) * scale[g];
      }
    });
    return MatrixLayout{K, n, 1, K};
  }
};

// b's columns in bands of at most `bytes` widened (a whole number of `step` columns, at least one
// step), each band handed to multiply(j0, its widened copy, the copy's layout): the buffer is the
// thread's own and kept (above).
template <class Weight, class Multiply>
void for_widened_bands(std::vector<float>& buffer, const Weight& b, int64_t K, int64_t N, int64_t bytes, int64_t step,
                       const Multiply& multiply) {
  const int64_t band = std::max<int64_t>(step, bytes / int64_t{sizeof(float)} / std::max<int64_t>(K, 1) / step * step);
  for (int64_t j0 = 0; j0 < N; j0 += band) {
    const int64_t n = std::min(band, N - j0);
    const MatrixLayout lw = b.widen(buffer, j0, n);
    multiply(j0, buffer.data(), lw);
  }
}

// c (M,N) = a (M,K) float32 @ b (K,N) in fewer bits, with the bits of gemm<float> on b widened.
template <class Weight>
void gemm_widened(float* c, int64_t ldc, const float* a, const Weight& b, int64_t M, int64_t N, int64_t K,
                  const MatrixLayout& la) {
  if (M == 0 || N == 0) return;
  const MatrixLayout lb_rows{K, N, 1, K};  // b's layout as few_rows_times_big_weight asks it (w^T)
  if (K > 0 && M == 1 && b.rows_contiguous() && la.cs == 1) return b.rows_times(c, ldc, a, la.rs, 1);
  if (K > 0 && M > 1 && N > 1) {  // the float32 gemm's cases past its matrix-vector ones, in its order
    if (b.rows_contiguous() && few_rows_times_big_weight(M, N, K, la, lb_rows)) return b.rows_times(c, ldc, a, la.rs, M);
    if (small_gemm::worth_it(M, N, K)) {
      const kernels::Isa isa = small_gemm::best_isa_for(N);  // the kernel the whole product would get
      thread_local std::vector<float> panels;
      for_widened_bands(panels, b, K, N, kWidenedBandBytes, 32, [&](int64_t j0, const float* w, const MatrixLayout& lw) {
        small_gemm::sgemm(c + j0, ldc, a, la.rs, la.cs, w, lw.rs, lw.cs, M, lw.cols, K, isa);
      });
      return;
    }
  }
  thread_local std::vector<float> widened_b;  // one band: all of b, up to kWidenedWholeBytes
  for_widened_bands(widened_b, b, K, N, kWidenedWholeBytes, 16, [&](int64_t j0, const float* w, const MatrixLayout& lw) {
    gemm<float>(c + j0, ldc, a, w, M, lw.cols, K, la, lw);
  });
}

// c (M,N) = a (M,K) float32 @ b (K,N) bfloat16 or float16.
void gemm(float* c, int64_t ldc, const float* a, const BFloat16* b, int64_t M, int64_t N, int64_t K,
          const MatrixLayout& la, const MatrixLayout& lb) {
  gemm_widened(c, ldc, a, SixteenBitWeight<BFloat16>{b, lb}, M, N, K, la);
}
void gemm(float* c, int64_t ldc, const float* a, const Float16* b, int64_t M, int64_t N, int64_t K,
          const MatrixLayout& la, const MatrixLayout& lb) {
  gemm_widened(c, ldc, a, SixteenBitWeight<Float16>{b, lb}, M, N, K, la);
}

// Element offsets of each batch's a and b matrix, batches in row-major order, for operands whose
// batch dims broadcast to `batch` (a stride of 0 where one is broadcast).
std::vector<std::array<int64_t, 2>> batch_offsets(const Tensor& a, const Tensor& b, const Shape& batch, int64_t M,
                                                  int64_t N, int64_t K) {
  Shape full_a = batch, full_b = batch;
  full_a.insert(full_a.end(), {M, K});
  full_b.insert(full_b.end(), {K, N});
  const Shape sa = broadcast_strides(a, full_a);  // batch strides: the first batch.size() entries
  const Shape sb = broadcast_strides(b, full_b);
  std::vector<std::array<int64_t, 2>> offsets;
  offsets.reserve(static_cast<size_t>(shape_numel(batch)));
  // each "row" of for_each_row is a run along the last batch dim
  for_each_row<2>(batch, {sa.data(), sb.data()}, {0, 0},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                    for (int64_t j = 0; j < len; ++j) offsets.push_back({off[0] + j * st[0], off[1] + j * st[1]});
                  });
  return offsets;
}

// run_batch(i) for batches [0, count), each M*N*K multiply-adds. Small gemms run single-threaded
// inside BLIS (see kSingleThreadWork), so spread the batches over our own threads instead:
// attention's (B*NH) gemms of (T,hs)@(hs,T) are this case, and while generating, one query per
// head against the KV cache: the heads split over the threads. Each thread gets at least
// work_split's multiply-adds a thread: a fork/join for less (a few cached positions, a tiny
// model) costs more than it saves, and on a busy machine the threads wait for each other for
// milliseconds.
template <class F>
void run_batches(int64_t count, int64_t M, int64_t N, int64_t K, const F& run_batch) {
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) run_batch(i);
  };
  const int64_t work = std::max<int64_t>(M * N * K, 1);
  if (work <= kSingleThreadWork && count > 1) {
    parallel_for(0, count, work_split::grain_for_macs(work), run);
  } else {
    run(0, count);
  }
}

// A b without batch dims is shared by every batch of a (a linear layer: x (B,T,C) @ w (C,OC)).
// When a's batch and row dims fold into one, a single (B*T, C) @ (C, OC) gemm does them all,
// which runs faster than B small ones; out (B,T,OC) is the same memory as (B*T, OC).
std::optional<Tensor> rows_of_shared_product(const Tensor& a, const Tensor& b) {
  if (b.dim() == 2 && a.dim() > 2) return fold_leading_dims(a);
  return std::nullopt;
}

// T: a's and out's type; TB: b's, T or (a frozen 16-bit weight's) BFloat16 or Float16.
template <class T, class TB = T>
void batched_gemm_typed(const Tensor& out, const Tensor& a, const Tensor& b, const Shape& batch, int64_t M,
                        int64_t N, int64_t K) {
  get_num_threads();  // BLIS gets our thread count before its first call
  if (const std::optional<Tensor> rows = rows_of_shared_product(a, b)) {
    return batched_gemm_typed<T, TB>(out, *rows, b, {}, rows->size(0), N, K);
  }
  const Tensor ar = blis_operand(a);
  const Tensor br = blis_operand(b);
  const MatrixLayout la = matrix_layout(ar), lb = matrix_layout(br);
  const std::vector<std::array<int64_t, 2>> offsets = batch_offsets(ar, br, batch, M, N, K);
  T* o = out.data_ptr<T>();
  const T* pa = ar.data_ptr<T>();
  const TB* pb = br.data_ptr<TB>();
  run_batches(static_cast<int64_t>(offsets.size()), M, N, K, [&](int64_t i) {
    gemm(o + i * M * N, N, pa + offsets[i][0], pb + offsets[i][1], M, N, K, la, lb);
  });
  if (!offsets.empty()) {  // the debug hook sees the last batch's call
    const std::array<int64_t, 2>& last = offsets.back();
    last_call = GemmCall{pa + last[0], pb + last[1], la.rs, la.cs, lb.rs, lb.cs, M, N, K};
  }
}

// One operand of the bfloat16 gemm: its matrix at element offset `offset`.
bf16_gemm::Operand bf16_operand(const Tensor& t, const MatrixLayout& l, int64_t offset) {
  const char* base = static_cast<const char*>(t.raw_data()) + offset * static_cast<int64_t>(element_size(t.dtype()));
  return bf16_gemm::Operand{base, t.dtype(), l.rs, l.cs};
}

}  // namespace

void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Shape& batch, int64_t M, int64_t N,
                  int64_t K) {
  // a frozen 16-bit weight (ops/matmul.cpp): b read as it is, a (rarer) widened first
  if (is_16bit(a.dtype())) return batched_gemm(out, a.to(kFloat32), b, batch, M, N, K);
  if (b.dtype() == kBFloat16) return batched_gemm_typed<float, BFloat16>(out, a, b, batch, M, N, K);
  if (b.dtype() == kFloat16) return batched_gemm_typed<float, Float16>(out, a, b, batch, M, N, K);
  visit_floating(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    batched_gemm_typed<T>(out, a, b, batch, M, N, K);
  });
}

void gemm_int8_weight(const Tensor& out, const Tensor& x, const Tensor& values, const Tensor& scales) {
  get_num_threads();  // BLIS gets our thread count before its first call
  const int64_t R = x.size(0), K = x.size(1), N = values.size(0);
  const Int8Weight w{{values.data_ptr<int8_t>(), scales.data_ptr<float>(), K / std::max<int64_t>(scales.size(1), 1)}, K, N};
  gemm_widened(out.data_ptr<float>(), N, x.data_ptr<float>(), w, R, N, K, MatrixLayout{R, K, K, 1});
}

std::optional<Tensor> fold_leading_dims(const Tensor& t) {
  const int64_t n = t.dim();
  int64_t rows = 1, row_stride = t.strides()[n - 1], next = -1;  // next: stride the next outer dim needs
  for (int64_t d = n - 2; d >= 0; --d) {
    const int64_t size = t.sizes()[d], stride = t.strides()[d];
    if (size == 1) continue;  // steps nowhere
    if (next >= 0 && stride != next) return std::nullopt;
    if (next < 0) row_stride = stride;
    next = stride * size;
    rows *= size;
  }
  return make_view(t, {rows, t.sizes()[n - 1]}, {row_stride, t.strides()[n - 1]}, t.storage_offset());
}

void batched_gemm_bf16(const Tensor& out, const Tensor& a, const Tensor& b, const Shape& batch, int64_t M,
                       int64_t N, int64_t K) {
  if (const std::optional<Tensor> rows = rows_of_shared_product(a, b)) {
    return batched_gemm_bf16(out, *rows, b, {}, rows->size(0), N, K);
  }
  const MatrixLayout la = matrix_layout(a), lb = matrix_layout(b);  // any strides, 0 included
  const std::vector<std::array<int64_t, 2>> offsets = batch_offsets(a, b, batch, M, N, K);
  float* o = out.data_ptr<float>();
  const bf16_gemm::Kernel kernel = bf16_kernel();
  run_batches(static_cast<int64_t>(offsets.size()), M, N, K, [&](int64_t i) {
    bf16_gemm::gemm(o + i * M * N, N, bf16_operand(a, la, offsets[i][0]), bf16_operand(b, lb, offsets[i][1]), M, N, K,
                    kernel);
  });
}

void gemm_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  get_num_threads();  // BLIS gets our thread count before its first call, as in batched_gemm
  const Tensor ar = blis_operand(a), br = blis_operand(b);
  const MatrixLayout la = matrix_layout(ar), lb = matrix_layout(br);
  visit_floating(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm(out.data_ptr<T>(), out.stride(0), ar.data_ptr<T>(), br.data_ptr<T>(), la.rows, lb.cols, la.cols, la, lb);
  });
}

namespace {

// GFLOP/s of `product` (an n x n x n product), the best of 3 after one to warm up.
double best_gflops(int64_t n, const std::function<void()>& product) {
  product();
  double best = 1e300;
  for (int r = 0; r < 3; ++r) {
    const auto start = std::chrono::steady_clock::now();
    product();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(n * n * n) / std::max(best, 1e-9) * 1e-9;
}

}  // namespace

const ProductSpeeds& product_speeds() {
  static const ProductSpeeds speeds = [] {
    constexpr int64_t n = 512;
    const Tensor a = make_empty({n, n}, kFloat32), b = make_empty({n, n}, kFloat32), out = make_empty({n, n}, kFloat32);
    for (int64_t i = 0; i < n * n; ++i) {  // any values: the time does not depend on them
      a.data_ptr<float>()[i] = static_cast<float>(i % 7) - 3.0f;
      b.data_ptr<float>()[i] = static_cast<float>(i % 5) - 2.0f;
    }
    ProductSpeeds s;
    s.float32_gflops = best_gflops(n, [&] { gemm_into(out, a, b); });
    const Tensor a16 = a.to(kBFloat16), b16 = b.to(kBFloat16);
    s.bfloat16_gflops = best_gflops(n, [&] { gemm_bf16_into(out, a16, b16); });
    return s;
  }();
  return speeds;
}

void gemm_bf16_into(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const MatrixLayout la = matrix_layout(a), lb = matrix_layout(b);
  bf16_gemm::gemm(out.data_ptr<float>(), out.stride(0), bf16_operand(a, la, 0), bf16_operand(b, lb, 0), la.rows,
                  lb.cols, la.cols, bf16_kernel(), bias.defined() ? bias.data_ptr<float>() : nullptr);
}

bf16_gemm::Kernel bf16_kernel() { return bf16_kernel_in_use().load(); }

void set_bf16_kernel(bf16_gemm::Kernel kernel) {
  if (!bf16_gemm::kernel_available(kernel)) {
    throw Error(std::string("set_bf16_kernel: this CPU cannot run the ") + bf16_gemm::kernel_name(kernel) + " kernel");
  }
  bf16_kernel_in_use().store(kernel);
}

const GemmCall& last_gemm_call() { return last_call; }

}  // namespace tg::kernels
