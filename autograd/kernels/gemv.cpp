// autograd/kernels/gemv.cpp — the row-by-row matrix-vector product of gemv.h (why it reads the
// matrix this way, and why every copy gives the same bits, are there).
#include "autograd/kernels/gemv.h"

#include <algorithm>

#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

namespace tg::gemv {

namespace {

// Each step reads 128 bytes (two cache lines) and asks for the two lines 2 KiB further on, into
// every cache level (locality 3; gemv.h says why): a hint only, which neither changes a result nor
// faults past the matrix's end.
constexpr int64_t kPrefetchAhead = 512;  // floats

// y[i] for rows [0, M): lanes of sums along the row, then a tree over the lanes.
[[gnu::always_inline]] inline void rows_body(float* y, int64_t incy, const float* a, int64_t lda, const float* x,
                                             int64_t M, int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    const float* row = a + i * lda;  // row (K)
    float lanes[kLanes] = {};
    int64_t k = 0;
    for (; k + kLanes <= K; k += kLanes) {
      __builtin_prefetch(row + k + kPrefetchAhead, 0, 3);
      __builtin_prefetch(row + k + kPrefetchAhead + 16, 0, 3);
      for (int j = 0; j < kLanes; ++j) lanes[j] += row[k + j] * x[k + j];
    }
    for (int j = 0; k + j < K; ++j) lanes[j] += row[k + j] * x[k + j];  // the last partial block
    for (int width = kLanes / 2; width >= 1; width /= 2)
      for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
    y[i * incy] = lanes[0];
  }
}

}  // namespace

void sgemv_rows(float* y, int64_t incy, const float* a, int64_t lda, const float* x, int64_t M, int64_t K, Isa isa) {
  // bands of whole rows, each at least work_split's bytes a thread (gemv.h)
  parallel_for(0, M, work_split::grain_for(K * int64_t{sizeof(float)}), [&](int64_t r0, int64_t r1) {
    kernels::run_on<rows_body>(isa, y + r0 * incy, incy, a + r0 * lda, lda, x, r1 - r0, K);
  });
}

}  // namespace tg::gemv
