// autograd/kernels/row_kernels.h — float32 loops over the rows of an (R,C) matrix: layer_norm's
// and rms_norm's forward and backward (autograd/ops/layer_norm.cpp, rms_norm.cpp) and the column
// sums that give a bias its gradient (sum_to, autograd/ops/reduce.cpp), and RoPE's rotation of
// each head's rows (autograd/ops/rope.cpp). Their plain references,
// the test oracles and what runs when the fast kernels are off, are the double-precision loops
// of those op files (nn_loops::layer_norm_forward_reference, rms_norm_forward_reference, their
// _backward_reference), sum over one dim, and rope.cpp's rope_forward_reference and
// rope_backward_reference.
//
// Buffers are contiguous; outputs first, then inputs, then sizes; gradients prefixed d.
//   layer_norm  as nn_loops.h: mean, rstd (R) per row; dweight, dbias (C) summed over rows
//   rms_norm    as nn_loops.h: rstd (R) per row; dweight (C) summed over rows
//   column_sums out (C) = sum_r inp (R,C)
#pragma once
#include <cstdint>

#include "autograd/kernels/isa.h"

namespace tg::row_kernels {

using kernels::Isa;

// The copy the rows run: AVX2 when this CPU has it.
inline Isa best_isa() { return kernels::best_isa(Isa::kAvx2); }

// What makes them fast, and what keeps their results fixed:
//   * a row's sums run in kLanes float lanes (lane j takes elements j, j + 8, ...), the lanes
//     added in order 0..7, then the elements past the last whole block of eight one by one.
//     The mean is corrected by a second pass, mean += mean(x - mean), and the variance is a
//     third, sum (x - mean)^2, so a row far from zero (x = 1000 + noise) loses nothing to
//     rounding or cancellation;
//   * sums over rows (dweight, dbias, column sums) are taken per block of kRowBlock rows in
//     double, each column on its own (no lanes: the columns are the vector), and the blocks'
//     sums added in block order, in double;
//   * rows are split over the threads, each row (each block, for the sums over rows) wholly
//     on one thread; the block boundaries are fixed, so no result depends on the thread count;
//   * compiled for each instruction set (isa.h), picked at run time; the copies give the same
//     bits (the same operations in the same order; nothing is fused).
constexpr int kLanes = 8;
constexpr int64_t kRowBlock = 64;

// out (R,C), mean (R), rstd (R) from inp (R,C), weight (C), bias (C); weight and bias may be
// null (taken as 1 and 0).
void layer_norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                        const float* bias, int64_t R, int64_t C, double eps, Isa isa = best_isa());

// dinp (R,C), dweight (C), dbias (C) from dout (R,C), inp (R,C), weight (C), mean (R), rstd (R).
// Any of dinp / dweight / dbias may be null (not wanted); weight may be null (taken as 1).
void layer_norm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, const float* mean, const float* rstd, int64_t R, int64_t C,
                         Isa isa = best_isa());

// rms_norm: out (R,C), rstd (R) from inp (R,C), weight (C) or null (taken as 1); the mean of the
// squares is one lane sum (no mean to subtract, so nothing cancels), rstd = 1 / sqrt(it + eps).
void rms_norm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t R, int64_t C, double eps,
                      Isa isa = best_isa());

// dinp (R,C), dweight (C) from dout (R,C), inp (R,C), weight (C), rstd (R). dinp or dweight may be
// null (not wanted); weight may be null (taken as 1).
void rms_norm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                       const float* rstd, int64_t R, int64_t C, Isa isa = best_isa());

// out (C) = sum over the R rows of inp (R,C).
void column_sums(float* out, const float* inp, int64_t R, int64_t C, Isa isa = best_isa());

// RoPE on x seen as (B, H, T, hs): the last dim contiguous, the other three at any strides, so a
// head's queries are read straight from the projection's (B, T, H, hs) output, transposed by its
// strides, with no copy first. out (B, H, T, hs) contiguous; cos and sin (T, hs) contiguous.
//   rope_forward   out = x * cos + rotate_half(x) * sin
//   rope_backward  out = dx from x = dy: dy * cos + rotate_half^T(dy * sin)
// Each element is rope.cpp's reference formula, in its order (two products, then their sum), so
// the same bits; (B * H) blocks of (T, hs) split over the threads.
struct RopeShape {
  int64_t B, H, T, hs;
  int64_t stride_b, stride_h, stride_t;  // x's, in elements
};
void rope_forward(float* out, const float* x, const float* cos, const float* sin, const RopeShape& shape,
                  Isa isa = best_isa());
void rope_backward(float* out, const float* dy, const float* cos, const float* sin, const RopeShape& shape,
                   Isa isa = best_isa());

}  // namespace tg::row_kernels
