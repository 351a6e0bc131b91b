// autograd/kernels/optim_kernels.h — the element loops of Adam's and AdamW's step and of the
// gradient 2-norm, compiled again for AVX2+FMA (eight floats a step) when the CPU has it.
//
// They speed up adam_step_reference (optim/adam.cpp) and sum_of_squares_reference
// (optim/clip_grad.cpp), their test oracles, and give the same bits: the same correctly rounded
// operations (fma, sqrt, +, *, /) in the same order. Only the compiled code differs: the
// references are compiled for baseline x86-64, where std::fma is a call into libm per element
// and nothing is vectorised.
//
// One AdamW step over the small GPT's 824832 float32 parameters (bench_kernels --threads 1,
// medians, the two builds run in turn on a busy 2-core machine):
//   plain loop (an fma is a call into libm, nothing vectorised)      9.2 ms
//   AVX2+FMA copy, 8 floats a step                                   0.86 ms
// optim_kernels.cpp is built with -fno-math-errno (CMakeLists.txt): with errno to set, every
// sqrt is a branch and the loop does not vectorise. Nothing there reads errno.
#pragma once
#include <cmath>
#include <cstdint>

#include "autograd/kernels/isa.h"

namespace tg::optim {

// The numbers one Adam / AdamW step of one parameter uses, in the parameter's type T
// (optim/adam.cpp computes them once per step).
template <class T>
struct AdamStep {
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T weight_decay;        // Adam: added to the gradient (0: skipped)
  T decay;               // AdamW: 1 - lr * weight_decay, multiplies the parameter
  T bias_correction2_sqrt, eps, neg_step_size;
  bool decoupled, amsgrad, maximize;
};

// torch.maximum: NaN when either is NaN.
template <class T>
T nan_max(T a, T b) {
  return std::isnan(a) || a > b ? a : b;
}

// The plain loops (defined in optim/adam.cpp and optim/clip_grad.cpp), float and double.
// p, grad, m (exp_avg), v (exp_avg_sq), v_max (max_exp_avg_sq, amsgrad only): (N) each.
template <class T>
void adam_step_reference(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s);
// sum_i x_i^2 of x (N), in PyTorch's order.
template <class T>
T sum_of_squares_reference(const T* x, int64_t n);

}  // namespace tg::optim

namespace tg::kernels {

// adam_step_reference on the copy compiled for `isa` (which must be available here).
template <class T>
void adam_step(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const optim::AdamStep<T>& s,
               Isa isa = best_isa(Isa::kAvx2));

// sum_of_squares_reference on the copy compiled for `isa`.
template <class T>
T sum_of_squares(const T* x, int64_t n, Isa isa = best_isa(Isa::kAvx2));

}  // namespace tg::kernels
