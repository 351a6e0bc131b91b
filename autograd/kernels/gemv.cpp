// autograd/kernels/gemv.cpp — the row-by-row matrix-vector product of gemv.h (why it reads the
// matrix this way, and why every copy gives the same bits, are there).
#include "autograd/kernels/gemv.h"

#include <algorithm>
#include <bit>

#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

namespace tg::gemv {

namespace {

// A weight's element as float32: a float is itself; a bfloat16 is its 16 bits with 16 zero bits
// below them, exactly its value (autograd/dtype.h). So a bfloat16 matrix gives the products, and
// the sums, that the same matrix widened to float32 gives: the same bits, from half the bytes.
[[gnu::always_inline]] inline float widen(float w) { return w; }
[[gnu::always_inline]] inline float widen(BFloat16 w) { return std::bit_cast<float>(static_cast<uint32_t>(w.bits) << 16); }

// Each step reads kLanes elements of a row (128 bytes of floats, 64 of bfloat16) and asks for the
// cache lines 2 KiB further on, into every cache level (locality 3; gemv.h says why): a hint only,
// which neither changes a result nor faults past the matrix's end.
constexpr int64_t kPrefetchAheadBytes = 2048;
constexpr int64_t kCacheLine = 64;

// out[r] = sum_k row[k] x_r[k] for the kVectors vectors x_r = x + r * ldx: for each vector, lanes
// of sums along the row, then a tree over the lanes. The vectors share each load of the row.
template <int kVectors, class W>
[[gnu::always_inline]] inline void row_dots(float* out, const W* row, const float* x, int64_t ldx, int64_t K) {
  float lanes[kVectors][kLanes] = {};
  const char* bytes = reinterpret_cast<const char*>(row);
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    for (int64_t line = 0; line < kLanes * int64_t{sizeof(W)}; line += kCacheLine)
      __builtin_prefetch(bytes + k * int64_t{sizeof(W)} + kPrefetchAheadBytes + line, 0, 3);
    for (int r = 0; r < kVectors; ++r)
      for (int j = 0; j < kLanes; ++j) lanes[r][j] += widen(row[k + j]) * x[r * ldx + k + j];
  }
  for (int r = 0; r < kVectors; ++r) {
    for (int j = 0; k + j < K; ++j) lanes[r][j] += widen(row[k + j]) * x[r * ldx + k + j];  // the last partial block
#pragma GCC unroll 8  // each step's width a constant: the compiler adds whole registers (the same order)
    for (int width = kLanes / 2; width >= 1; width /= 2)
      for (int j = 0; j < width; ++j) lanes[r][j] += lanes[r][j + width];
    out[r] = lanes[r][0];
  }
}

// y[r * ldy + i * incy] for rows i in [0, M) and vectors r in [0, R): each row of a is read from
// memory once, for the first vectors, and from the L1 cache for the others, up to 4 at a time.
template <class W>
[[gnu::always_inline]] inline void rows_body(float* y, int64_t ldy, int64_t incy, const W* a, int64_t lda,
                                             const float* x, int64_t ldx, int64_t R, int64_t M, int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    const W* row = a + i * lda;  // row (K)
    for (int64_t r = 0; r < R; r += 4) {
      float out[4];
      const float* xr = x + r * ldx;
      const int64_t n = std::min<int64_t>(4, R - r);
      if (n == 4) row_dots<4>(out, row, xr, ldx, K);
      else if (n == 3) row_dots<3>(out, row, xr, ldx, K);
      else if (n == 2) row_dots<2>(out, row, xr, ldx, K);
      else row_dots<1>(out, row, xr, ldx, K);
      for (int64_t q = 0; q < n; ++q) y[(r + q) * ldy + i * incy] = out[q];
    }
  }
}

// The rows split into bands over the threads (gemv.h), each band on this CPU's widest copy.
template <class W>
void rows_many(float* y, int64_t ldy, int64_t incy, const W* a, int64_t lda, const float* x, int64_t ldx, int64_t R,
               int64_t M, int64_t K, Isa isa) {
  // bands of whole rows, each at least work_split's bytes a thread (gemv.h)
  parallel_for(0, M, work_split::grain_for(K * int64_t{sizeof(W)}), [&](int64_t r0, int64_t r1) {
    kernels::run_on<rows_body<W>>(isa, y + r0 * incy, ldy, incy, a + r0 * lda, lda, x, ldx, R, r1 - r0, K);
  });
}

}  // namespace

void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const float* a, int64_t lda, const float* x, int64_t ldx,
                     int64_t R, int64_t M, int64_t K, Isa isa) {
  rows_many(y, ldy, incy, a, lda, x, ldx, R, M, K, isa);
}

void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const BFloat16* a, int64_t lda, const float* x,
                     int64_t ldx, int64_t R, int64_t M, int64_t K, Isa isa) {
  rows_many(y, ldy, incy, a, lda, x, ldx, R, M, K, isa);
}

void sgemv_rows(float* y, int64_t incy, const float* a, int64_t lda, const float* x, int64_t M, int64_t K, Isa isa) {
  rows_many(y, 0, incy, a, lda, x, 0, 1, M, K, isa);
}

void sgemv_rows(float* y, int64_t incy, const BFloat16* a, int64_t lda, const float* x, int64_t M, int64_t K, Isa isa) {
  rows_many(y, 0, incy, a, lda, x, 0, 1, M, K, isa);
}

}  // namespace tg::gemv
