// autograd/kernels/gemv.h — a float32 matrix-vector product over a matrix whose rows are
// contiguous: the one-token linear layer of generation with the KV cache. The matrix may be
// bfloat16 or float16 (a checkpoint's 16-bit weight), widened exactly as it is read, or int8 with a scale
// per group of a row (a weight quantized at load time), dequantized as it is read.
//
//   y[i] = sum_k a[i, k] x[k]        a (M, K) with rows lda apart, x (K), y (M) incy apart
//
// Why it exists: writing one token, every linear layer and the output head multiply a weight
// (out, in), stored row by row, by one vector. Each weight is read once per token and used once,
// so the token's time is the time to read the weights from memory; sgemv_rows says how this
// kernel reads them faster than BLIS's gemv. The plain reference and test oracle is
// matmul_reference (autograd/ops/matmul.cpp), which sums in double: the two agree to float
// rounding. kernels/gemm.h picks this kernel for a product with one row or one column when the
// matrix's rows and the vector are contiguous, and BLIS's gemv otherwise.
#pragma once
#include <cstdint>

#include "autograd/dtype.h"
#include "autograd/kernels/isa.h"

namespace tg::gemv {

using kernels::Isa;

constexpr int kLanes = 32;  // four AVX2 registers of sums, two AVX-512 ones

// The copy to run: the widest this CPU has.
inline Isa best_isa() { return kernels::best_isa(Isa::kAvx512); }

// y (M), y[i * incy] = a (M, K) @ x (K); a[i, k] = a[i * lda + k], x contiguous. M, K >= 0.
//
// The read: BLIS's gemv reads several rows at a time (a stream per row), at about two thirds the
// rate of one loop reading the same bytes front to back. This kernel reads the matrix in that
// order, one row after the other, so the hardware prefetcher sees one stream. The loop also asks
// for the bytes 2 KiB ahead of where it reads (8 KiB in a 16-bit row, 4 in an int8 one: gemv.cpp)
// (__builtin_prefetch, a hint that changes no result):
// with it a large matrix reads about 1.7 times as fast as with the hardware alone, as fast as a
// loop that only sums the bytes. The hint asks for the lines into every cache level (locality 3,
// x86's prefetcht0), not as non-temporal data (locality 0, prefetchnta): on an Intel Xeon the
// non-temporal hint halved the read, slower than no hint at all. (Measured in docs/performance.md.)
//
// The sum: lane j (of kLanes) takes the products k = j, j + kLanes, ... in k order, each product
// rounded and then added (no fma: the project builds with -ffp-contract=off); then the lanes are
// added as a binary tree (lane j += lane j + w for w = kLanes/2, ..., 1). It is one loop written
// once, compiled for each instruction set (isa.h): every copy gives the same bits, at any vector
// width, and a row's result does not depend on the other rows or on the thread count.
//
// Threads: the matrix is cut into bands of whole rows, one per thread, each read front to back,
// each at least autograd/runtime/work_split.h's bytes a thread (a few hundred kB: every weight of
// GPT-2 124M is split). One core does not use all of the memory's bandwidth: two threads with
// every matrix split write close to twice the tokens of one (docs/performance.md). A matrix
// smaller than two bands runs on the calling thread, where a wake-up and join would cost more than
// it saves.
void sgemv_rows(float* y, int64_t incy, const float* a, int64_t lda, const float* x, int64_t M, int64_t K,
                Isa isa = best_isa());
// The same product of a bfloat16 matrix: a frozen 16-bit weight (a checkpoint's, kept in its own
// dtype). Each element is widened to float32 as it is read (its 16 bits, then 16 zero bits: its
// exact value), then multiplied and summed in the order above, so y has the bits the float32 copy
// of a gives, from half the bytes: a token's time is those bytes (gemv.cpp: widen).
void sgemv_rows(float* y, int64_t incy, const BFloat16* a, int64_t lda, const float* x, int64_t M, int64_t K,
                Isa isa = best_isa());
// The same of a float16 matrix (an F16 checkpoint's weight): each element widened exactly as it is
// read (autograd/float16.h, in steps that vectorise), so again the float32 copy's bits.
void sgemv_rows(float* y, int64_t incy, const Float16* a, int64_t lda, const float* x, int64_t M, int64_t K,
                Isa isa = best_isa());

// The same product for R vectors at once: y[r * ldy + i * incy] = a (M, K) @ x_r (K), with
// x_r = x + r * ldx contiguous. Writing a batch of B sequences, each decode step's linear layers
// multiply a weight by B vectors (one token of each). Each row of a is read from memory once and
// multiplied by every vector while it is in the cache, so the step still costs one read of the
// weights; every element gets the bits sgemv_rows gives that vector alone (the same row loop).
void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const float* a, int64_t lda, const float* x, int64_t ldx,
                     int64_t R, int64_t M, int64_t K, Isa isa = best_isa());
void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const BFloat16* a, int64_t lda, const float* x,
                     int64_t ldx, int64_t R, int64_t M, int64_t K, Isa isa = best_isa());
void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const Float16* a, int64_t lda, const float* x,
                     int64_t ldx, int64_t R, int64_t M, int64_t K, Isa isa = best_isa());

// An int8 matrix (M, K) with one float32 scale per `group` elements of a row (ops/quantize.cpp):
// a[i, k] = values[i * K + k] * scales[i * (K / group) + k / group], group dividing K. Each element
// is dequantized to float32 as it is read (that product, rounded once), then multiplied and summed
// in the order above: the bits the dequantized float32 matrix gives, from 1 + 4 / group bytes an
// element instead of 4.
struct Int8Matrix {
  const int8_t* values;  // (M, K), rows contiguous
  const float* scales;   // (M, K / group)
  int64_t group;
};
void sgemv_rows_many(float* y, int64_t ldy, int64_t incy, const Int8Matrix& a, const float* x, int64_t ldx, int64_t R,
                     int64_t M, int64_t K, Isa isa = best_isa());

}  // namespace tg::gemv
