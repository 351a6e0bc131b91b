// autograd/kernels/optim_kernels.cpp — the vectorised copies of Adam's step and of the sum of
// squares (see optim_kernels.h), each written once as an always-inline body and compiled for
// every instruction set by isa.h's run_on.
#include "autograd/kernels/optim_kernels.h"

namespace tg::kernels {

using optim::AdamStep;

namespace {

// One combination of the flags, so that the compiled loop has no branch per element (the
// vectoriser needs that) yet does what adam_step_reference does, operation for operation.
template <bool kDecoupled, bool kAmsgrad, class T>
[[gnu::always_inline]] inline void adam_loop(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n,
                                             const AdamStep<T>& s) {
  const bool coupled_decay = !kDecoupled && s.weight_decay != 0;
  for (int64_t i = 0; i < n; ++i) {
    T g = s.maximize ? -grad[i] : grad[i];
    if (coupled_decay) g = std::fma(s.weight_decay, p[i], g);  // g + wd p
    T pi = p[i];
    if constexpr (kDecoupled) pi = pi * s.decay;  // p (1 - lr wd)
    const T mi = std::fma(s.one_minus_beta1, g, m[i] * s.beta1);
    const T vi = std::fma(s.one_minus_beta2 * g, g, v[i] * s.beta2);
    m[i] = mi;
    v[i] = vi;
    T v_hat = vi;
    if constexpr (kAmsgrad) v_hat = v_max[i] = optim::nan_max(v_max[i], vi);
    const T denom = std::sqrt(v_hat) / s.bias_correction2_sqrt + s.eps;
    p[i] = pi + s.neg_step_size * mi / denom;
  }
}

template <class T>
[[gnu::always_inline]] inline void adam_body(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n,
                                             const AdamStep<T>* s) {
  if (s->decoupled && !s->amsgrad) adam_loop<true, false>(p, grad, m, v, v_max, n, *s);
  else if (s->decoupled) adam_loop<true, true>(p, grad, m, v, v_max, n, *s);
  else if (!s->amsgrad) adam_loop<false, false>(p, grad, m, v, v_max, n, *s);
  else adam_loop<false, true>(p, grad, m, v, v_max, n, *s);
}

// Lane j sums the squares of x[j], x[8 + j], ... over the whole blocks of eight (one lane of
// PyTorch's vector kernel each), written so that a block is one vector operation.
template <class T>
[[gnu::always_inline]] inline T sum_of_squares_body(const T* x, int64_t n) {
  T lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] = std::fma(x[i + j], x[i + j], lanes[j]);
  T sum = lanes[0];
  for (int j = 1; j < 8; ++j) sum = sum + lanes[j];
  for (; i < n; ++i) sum = std::fma(x[i], x[i], sum);
  return sum;
}

}  // namespace

template <class T>
void adam_step(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s, Isa isa) {
  run_on<adam_body<T>>(isa, p, grad, m, v, v_max, n, &s);
}
template void adam_step<float>(float*, const float*, float*, float*, float*, int64_t, const AdamStep<float>&, Isa);
template void adam_step<double>(double*, const double*, double*, double*, double*, int64_t,
                                const AdamStep<double>&, Isa);

template <class T>
T sum_of_squares(const T* x, int64_t n, Isa isa) {
  return run_on<sum_of_squares_body<T>>(isa, x, n);
}
template float sum_of_squares<float>(const float*, int64_t, Isa);
template double sum_of_squares<double>(const double*, int64_t, Isa);

}  // namespace tg::kernels
