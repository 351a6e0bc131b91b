// autograd/kernels/adam_step.h — the numbers one Adam / AdamW step of one parameter uses, as the
// plain loop (optim/optim_loops.h: adam_step_reference) and its vectorised copy
// (autograd/kernels/optim_kernels.h) both take them. Here, below both, so that the kernels never
// include the optimizers (optim/ stands on autograd/, not the other way).
#pragma once
#include <cmath>

namespace tg::optim {

// In the parameter's type T; optim/adam.cpp computes them once per step.
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

}  // namespace tg::optim
