// optim/adam.cpp — Adam's and AdamW's update: one loop over each parameter's elements.
//
// The arithmetic follows torch 1.13's single-tensor Adam/AdamW on the CPU, so float32 results
// equal PyTorch's bit for bit. The per-step numbers (bias corrections, step size) are computed
// in double, as Python computes them, then rounded to the parameter's dtype with the other
// hyperparameters (as a Python float meeting a float32 tensor is). PyTorch's CPU kernels fuse
// "x.add_(y, alpha=a)" into fma(a, y, x) and "x.addcmul_(y, z, value=c)" into fma(c * y, z, x);
// so does the loop below, adam_step_reference.
//
// With fast_kernels() on, the same loop runs vectorised and split over the threads
// (autograd/kernels/optim_kernels.h: the same bits, faster; measured in docs/performance.md).
#include "optim/adam.h"

#include <cmath>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/optim_kernels.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"
#include "autograd/tape.h"
#include "optim/optim_loops.h"

namespace tg::optim {

namespace {

std::vector<std::string> adam_state_names(const AdamOptions& o) {
  if (o.amsgrad) return {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"step", "exp_avg", "exp_avg_sq"};
}

// An element reads its parameter, gradient and two moments and writes three of them: 7 floats.
constexpr int64_t kAdamGrain = work_split::grain_for(7 * int64_t{sizeof(float)});

}  // namespace

// p, grad, m (exp_avg), v (exp_avg_sq), v_max (max_exp_avg_sq, amsgrad only): (N) each.
template <class T>
void adam_step_reference(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const AdamStep<T>& s) {
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
template void adam_step_reference<float>(float*, const float*, float*, float*, float*, int64_t,
                                         const AdamStep<float>&);
template void adam_step_reference<double>(double*, const double*, double*, double*, double*, int64_t,
                                          const AdamStep<double>&);

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
  const double beta1 = options_.betas.first, beta2 = options_.betas.second;
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
    with_floating_type(slot, [&](auto zero) {
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
      const int64_t n = slot.param.numel();
      if (!fast_kernels()) {  // the plain loop, on one thread
        adam_step_reference(pp, pg, pm, pv, pv_max, n, s);
        return;
      }
      // Each element is updated alone, so how the elements are split over the threads changes
      // no bit; a chunk is at least kAdamGrain elements (autograd/runtime/work_split.h).
      parallel_for(0, n, kAdamGrain, [&](int64_t b, int64_t e) {
        kernels::adam_step(pp + b, pg + b, pm + b, pv + b, pv_max ? pv_max + b : nullptr, e - b, s);
      });
    });
    mark_written(slot.param);
    mark_written(m);
    mark_written(v);
  });
}

}  // namespace tg::optim
