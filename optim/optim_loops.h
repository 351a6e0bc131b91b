// optim/optim_loops.h — the optimizers' plain element loops, as buffers in and out: Adam's and
// AdamW's step of one parameter (optim/adam.cpp) and the sum of squares of the gradient 2-norm
// (optim/clip_grad.cpp). They run when the fast kernels are off (autograd/fast_kernels.h), and
// they are the oracle of the vectorised copies in autograd/kernels/optim_kernels.h, which take
// the same AdamStep and give the same bits. Instantiated for float and double.
#pragma once
#include <cmath>
#include <cstdint>

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

// One step of one parameter. p, grad, m (exp_avg), v (exp_avg_sq), v_max (max_exp_avg_sq,
// amsgrad only): (N) each.
template <class T>
void adam_step_reference(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s);
// sum_i x_i^2 of x (N), in PyTorch's order.
template <class T>
T sum_of_squares_reference(const T* x, int64_t n);

}  // namespace tg::optim
