// autograd/kernels/softmax_kernels.h — the float32 row loops behind softmax, log_softmax,
// masked_scaled_softmax and cross_entropy along a contiguous last dim (autograd/ops/softmax.cpp,
// attention.cpp, loss.cpp). Their plain references, the test oracles, the float64 path and
// what runs when the fast kernels are off, are the `_reference` loops of the op files.
//
// One row x (n), all in float except where it says double:
//   m    = max_j x_j                                    16 running maxima, then one
//   e_j  = exp(x_j - m)                                 vec_math::exp (<= 1 ulp, vectorised)
//   s    = sum_j e_j                                    in 16 double lanes (softmax_row)
//   softmax            y_j  = float(double(e_j) * (1/s))
//   log_softmax        y_j  = float(double(x_j) - lse),            lse = double(m) + log(s)
//   softmax backward   dx_j = float(double(y_j) (double(g_j) - d)) / divisor,
//                              d = sum_k double(g_k) double(y_k)    in 16 double lanes
//   cross_entropy backward, for the row's lse (saved by the forward) and target t:
//                      dx_j = float((double(e_j) exp(m - lse) - [j == t]) * scale)
#pragma once
#include <cstdint>

#include "autograd/kernels/isa.h"
#include "autograd/runtime/work_split.h"

namespace tg::softmax_kernels {

using kernels::Isa;

// The copy the rows run: AVX2 when this CPU has it.
//
// Each loop is written once (softmax_kernels.cpp) and compiled for every instruction set by
// kernels::run_on (isa.h); the copies give the same bits (vec_math.h says why). The rows run
// the AVX2 copy at most, the copy they were tuned and timed with, except softmax_row and
// softmax_backward_row, which have AVX-512 copies of their own, written with intrinsics: a
// masked last step instead of scalar code for the row's last n % 16 keys.
inline Isa best_isa() { return kernels::best_isa(Isa::kAvx2); }

// Rows per parallel_for chunk for rows of n: work_split's bytes a thread, a row of n floats read
// once and written once. (Each row is computed wholly by one thread, so the split changes no
// result.)
inline int64_t rows_per_chunk(int64_t n) { return work_split::grain_for(n * 2 * int64_t{sizeof(float)}); }

// The copy softmax_row, softmax_backward_row and divide_row run: AVX-512 when this CPU has it
// (the first two have loops of their own there, the last n % 16 keys in one masked step; the
// other rows keep the AVX2 copy).
inline Isa best_softmax_row_isa() { return kernels::best_isa(Isa::kAvx512); }

// y (n) = x (n) / divisor, each quotient rounded once (attention's scores over sqrt(d_k)); y may
// be x. On AVX-512 where the CPU has it: the division is slow, and 16 lanes divide at once.
void divide_row(float* y, const float* x, int64_t n, float divisor, Isa isa = best_softmax_row_isa());

// y (n) = softmax(x (n)), returning 1/s (NaN when s is: a NaN or +inf entry, or all -inf).
// y may be x; n may be 0.
//
// The lanes, in every row's sums: lane k adds the terms j with j % 16 == k, from the left, in
// double; at the end of the row lane k + 8 is added to lane k, then k + 4, + 2, + 1. No chain waits
// on the previous term, so the sums vectorise, and the order is the same whatever the row's
// address, the thread or the instruction set. A row of n terms followed by terms that are exactly 0
// (the exp of -inf, a product with a zero weight) has the same lane sums as the n terms alone: a
// lane starts at +0 and x + (+-0) = x. That keeps masked_scaled_softmax, which stops at a causal
// row's last visible key, bit for bit equal to softmax of the masked scores.
//
// The references differ in exp (std::exp, or exp in double) and in summing from the left.
// Accuracy against the references (tests/autograd/test_softmax_kernels.cpp, rows of 1 to 1000
// with -inf entries, all -inf, large and nearly equal values), worst seen:
//   softmax 3 ulp (both exps are within 1 ulp); log_softmax 1 ulp; softmax backward, from the
//   same y and g, the same bits (the sum of exact products only reordered, in double);
//   cross_entropy lse 1 ulp of float, its backward 6e-8 absolute (where p - 1 cancels).
double softmax_row(float* y, const float* x, int64_t n, Isa isa = best_softmax_row_isa());

// softmax_row on `rows` rows, row r at x + r x_stride (lengths[r] of it) into y + r y_stride,
// 1/s into inv[r]: the same bits, faster on AVX-512 for short rows (it overlaps a few rows' passes).
void softmax_rows(double* inv, float* y, int64_t y_stride, const float* x, int64_t x_stride, const int64_t* lengths,
                  int64_t rows, Isa isa = best_softmax_row_isa());

// y (n) = log_softmax(x (n)); y must not overlap x (it holds the exponentials first).
void log_softmax_row(float* y, const float* x, int64_t n, Isa isa = best_isa());

// log sum_j exp(x_j) of x (n), in double; e (n) is scratch (the exponentials, left there).
double logsumexp_row(float* e, const float* x, int64_t n, Isa isa = best_isa());

// dx (n) = the softmax backward of the gradient g (n) at the output y (n), divided by
// `divisor` (1: none; sqrt(d_k) in attention). dx may be g or y.
void softmax_backward_row(float* dx, const float* g, const float* y, int64_t n, float divisor,
                          Isa isa = best_softmax_row_isa());

// dx (n) = (softmax(x) - onehot(target)) * scale for the row x (n), given its lse from the
// forward (logsumexp_row).
void cross_entropy_backward_row(float* dx, const float* x, double lse, int64_t target, double scale, int64_t n,
                                Isa isa = best_isa());

}  // namespace tg::softmax_kernels
