// optim/adam.cpp — Adam's and AdamW's update: one loop over each parameter's elements.
//
// The arithmetic follows torch 1.13's single-tensor Adam/AdamW on the CPU, so float32 results
// equal PyTorch's bit for bit. The per-step numbers (bias corrections, step size) are computed
// in double, as Python computes them, then rounded to the parameter's dtype with the other
// hyperparameters (as a Python float meeting a float32 tensor is). PyTorch's CPU kernels fuse
// "x.add_(y, alpha=a)" into fma(a, y, x) and "x.addcmul_(y, z, value=c)" into fma(c * y, z, x);
// so does the loop below (autograd/kernels/optim_kernels.h).
//
// One AdamW step over the small GPT's 824832 float32 parameters (bench_kernels --threads 1,
// medians, the two builds run in turn on a busy 2-core machine):
//   plain loop (an fma is a call into libm, nothing vectorised)      9.2 ms
//   AVX2+FMA copy, 8 floats a step                                   0.86 ms
// The copy is built with -fno-math-errno (CMakeLists.txt): with errno to set, every sqrt is a
// branch and the loop does not vectorise. Nothing here reads errno.
#include "optim/adam.h"

#include <cmath>

#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "autograd/kernels/optim_kernels.h"

namespace tg::optim {

namespace {

std::vector<std::string> adam_state_names(const AdamOptions& o) {
  if (o.amsgrad) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"step", "exp_avg", "exp_avg_sq"};
}

constexpr int64_t kAdamGrain = 32768;

// One combination of the flags, so that the compiled loop has no branch per element (the
// vectoriser needs that) yet does what adam_update_naive does, operation for operation.
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
    if constexpr (kAmsgrad) v_hat = v_max[i] = nan_max(v_max[i], vi);
    const T denom = std::sqrt(v_hat) / s.bias_correction2_sqrt + s.eps;
    p[i] = pi + s.neg_step_size * mi / denom;
  }
}

template <class T>
[[gnu::target("avx2,fma")]] void adam_update_avx2(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n,
                                                  const AdamStep<T>& s) {
  if (s.decoupled && !s.amsgrad) adam_loop<true, false>(p, grad, m, v, v_max, n, s);
  else if (s.decoupled) adam_loop<true, true>(p, grad, m, v, v_max, n, s);
  else if (!s.amsgrad) adam_loop<false, false>(p, grad, m, v, v_max, n, s);
  else adam_loop<false, true>(p, grad, m, v, v_max, n, s);
}

}  // namespace

template <class T>
void adam_update(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s, Isa isa) {
  if (isa == Isa::kAvx2) adam_update_avx2(p, grad, m, v, v_max, n, s);
  else adam_update_naive(p, grad, m, v, v_max, n, s);
}
template void adam_update<float>(float*, const float*, float*, float*, float*, int64_t, const AdamStep<float>&, Isa);
template void adam_update<double>(double*, const double*, double*, double*, double*, int64_t,
                                  const AdamStep<double>&, Isa);

Adam::Adam(const std::vector<Tensor>& params, AdamOptions options) : Adam(single_group(params), options) {}
AdamW::AdamW(const std::vector<Tensor>& params, AdamOptions options) : AdamW(single_group(params), options) {}

Adam::Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions options, bool decoupled)
    : Optimizer(std::move(name), std::move(groups), options.lr, options.weight_decay.value_or(decoupled ? 0.01 : 0.0),
                adam_state_names(options)),
      options_(options),
      decoupled_(decoupled) {
  options_.weight_decay = options.weight_decay.value_or(decoupled ? 0.01 : 0.0);
  check_non_negative("epsilon value", options.eps);
  if (!(options.betas.first >= 0.0 && options.betas.first < 1.0)) {
    throw Error(this->name() + ": Invalid beta parameter at index 0: " + nn::python_float(options.betas.first));
  }
  if (!(options.betas.second >= 0.0 && options.betas.second < 1.0)) {
    throw Error(this->name() + ": Invalid beta parameter at index 1: " + nn::python_float(options.betas.second));
  }
}

void Adam::step() {
  NoGradGuard no_grad;
  const auto [beta1, beta2] = options_.betas;
  for_each_with_grad([&](const Group& group, Slot& slot, const Tensor& grad) {
    bool fresh = false;
    Tensor step_t = state_of(slot, 0, fresh);
    Tensor m = state_of(slot, 1, fresh), v = state_of(slot, 2, fresh);
    if (fresh) {  // a parameter's first step: zero step count and moments
      step_t.zero_();
      m.zero_();
      v.zero_();
    }
    Tensor v_max;
    if (options_.amsgrad) {
      v_max = state_of(slot, 3, fresh);
      if (fresh) v_max.zero_();
    }
    // The step count is a float32 tensor, as in torch 1.13; the corrections use it as a double.
    float& step_count = *step_t.data_ptr<float>();
    step_count += 1.0f;
    mark_written(step_t);
    const double step = step_count;
    const double bias_correction1 = 1.0 - std::pow(beta1, step);
    const double bias_correction2 = 1.0 - std::pow(beta2, step);
    const double step_size = group.lr / bias_correction1;
    with_floating_type(slot.param.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const AdamStep<T> s{static_cast<T>(beta1), static_cast<T>(1.0 - beta1), static_cast<T>(beta2),
                          static_cast<T>(1.0 - beta2), static_cast<T>(group.weight_decay),
                          static_cast<T>(1.0 - group.lr * group.weight_decay),
                          static_cast<T>(std::sqrt(bias_correction2)), static_cast<T>(options_.eps),
                          static_cast<T>(-step_size), decoupled_, options_.amsgrad, options_.maximize};
      T* const pp = slot.param.data_ptr<T>();
      const T* const pg = grad.data_ptr<T>();
      T* const pm = m.data_ptr<T>();
      T* const pv = v.data_ptr<T>();
      T* const pv_max = options_.amsgrad ? v_max.data_ptr<T>() : nullptr;
      // Each element is updated alone, so how the elements are split over the threads changes
      // no bit; a chunk is at least kAdamGrain elements (~128 KiB of float32 per array).
      parallel_for(0, slot.param.numel(), kAdamGrain, [&](int64_t b, int64_t e) {
        adam_update(pp + b, pg + b, pm + b, pv + b, pv_max ? pv_max + b : nullptr, e - b, s);
      });
    });
    mark_written(slot.param);
    mark_written(m);
    mark_written(v);
  });
}

}  // namespace tg::optim
