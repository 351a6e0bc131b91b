// optim/optim_loops.h — the optimizers' plain element loops, as buffers in and out: Adam's and
// AdamW's step of one parameter (optim/adam.cpp) and the sum of squares of the gradient 2-norm
// (optim/clip_grad.cpp). They run when the fast kernels are off (autograd/fast_kernels.h), and
// they are the oracle of the vectorised copies in autograd/kernels/optim_kernels.h, which take
// the same AdamStep (autograd/kernels/adam_step.h) and give the same bits. Instantiated for
// float and double.
#pragma once
#include <cstdint>

#include "autograd/kernels/adam_step.h"  // AdamStep, nan_max

namespace tg::optim {

// One step of one parameter. p, grad, m (exp_avg), v (exp_avg_sq), v_max (max_exp_avg_sq,
// amsgrad only): (N) each.
template <class T>
void adam_step_reference(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s);
// sum_i x_i^2 of x (N), in PyTorch's order.
template <class T>
T sum_of_squares_reference(const T* x, int64_t n);

}  // namespace tg::optim
