// autograd/kernels/optim_kernels.h — the element loops of Adam's and AdamW's step (optim/adam.cpp) and of the
// gradient 2-norm (optim/clip_grad.cpp), each with its plain twin.
//
// Adam / AdamW, with the numbers one step of one parameter uses (AdamStep):
//   g = grad (negated when maximize);  g += wd p (Adam)  or  p *= 1 - lr wd (AdamW)
//   m = fma(1 - b1, g, b1 m)           v = fma((1 - b2) g, g, b2 v)        v_max = max(v_max, v)
//   p = p + (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
// (torch 1.13's CPU arithmetic, fused multiply-adds where PyTorch's kernels fuse them.)
//
// The sum of squares behind the 2-norm, as PyTorch's CPU kernel sums it (so float32 norms
// match it, usually bit for bit): eight running sums (one per lane of its vector kernel) over
// whole blocks of eight, added up in order, then the remaining squares one by one, each step a
// fused multiply-add.
//
// The _naive twins are the plain loops, compiled for baseline x86-64: there std::fma is a call
// into libm per element, and nothing is vectorised. adam_update and sum_of_squares run the same
// arithmetic compiled a second time for AVX2+FMA (one instruction per fma, eight floats a step)
// when the CPU has it. An fma and a sqrt are correctly rounded on either path, so both give the
// same bits.
#pragma once
#include <cmath>
#include <cstdint>

#include "autograd/kernels/activation_kernels.h"

namespace tg::optim {

using activation_kernels::Isa;

// The numbers one step of one parameter uses, in the parameter's type T.
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

// p, grad, m (exp_avg), v (exp_avg_sq), v_max (max_exp_avg_sq, amsgrad only): (N) each.
template <class T>
void adam_update_naive(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s) {
  for (int64_t i = 0; i < n; ++i) {
    T g = s.maximize ? -grad[i] : grad[i];
    if (!s.decoupled && s.weight_decay != 0) g = std::fma(s.weight_decay, p[i], g);  // g + wd p
    if (s.decoupled) p[i] = p[i] * s.decay;                                          // p (1 - lr wd)
    m[i] = std::fma(s.one_minus_beta1, g, m[i] * s.beta1);                           // b1 m + (1 - b1) g
    v[i] = std::fma(s.one_minus_beta2 * g, g, v[i] * s.beta2);                       // b2 v + (1 - b2) g g
    T v_hat = v[i];
    if (s.amsgrad) v_hat = v_max[i] = nan_max(v_max[i], v[i]);                      // max(v_max, v)
    const T denom = std::sqrt(v_hat) / s.bias_correction2_sqrt + s.eps;              // sqrt(v / bc2) + eps
    p[i] = p[i] + s.neg_step_size * m[i] / denom;                                    // p - lr / bc1 * m / denom
  }
}

// The same update on the fastest copy `isa` allows (float and double).
template <class T>
void adam_update(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s,
                 Isa isa = activation_kernels::best_isa());

// sum_i x_i^2 of x (N), eight lanes. Always inlined, so that each compiled copy (the AVX2
// one too) has the loop in its own instructions.
template <class T>
[[gnu::always_inline]] inline T sum_of_squares_naive(const T* x, int64_t n) {
  T lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] = std::fma(x[i + j], x[i + j], lanes[j]);  // by lane
  T sum = lanes[0];
  for (int j = 1; j < 8; ++j) sum = sum + lanes[j];
  for (; i < n; ++i) sum = std::fma(x[i], x[i], sum);
  return sum;
}

template <class T>
T sum_of_squares(const T* x, int64_t n, Isa isa = activation_kernels::best_isa());

}  // namespace tg::optim
