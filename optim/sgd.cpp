// optim/sgd.cpp — SGD's update: one loop over each parameter's elements.
//
// The arithmetic follows torch 1.13's single-tensor SGD on the CPU, so float32 results equal
// PyTorch's bit for bit: hyperparameters are rounded to the parameter's dtype first (as a
// Python float meeting a float32 tensor is), and every "x.add_(y, alpha=a)" is one fused
// multiply-add, fma(a, y, x), as PyTorch's vectorised CPU kernel computes it.
#include "optim/sgd.h"

#include <cmath>

#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::optim {

namespace {

std::vector<std::string> sgd_state_names(const SGDOptions& o) {
  if (o.momentum != 0.0) return {"momentum_buffer"};
  return {};
}

// p, g, buf: (N) each; buf is read only when has_buf (it is written whenever momentum != 0).
template <class T>
void sgd_update(T* p, const T* grad, T* buf, int64_t n, const SGDOptions& o, double lr, double weight_decay,
                bool has_buf) {
  const T wd = static_cast<T>(weight_decay), momentum = static_cast<T>(o.momentum);
  const T keep = static_cast<T>(1.0 - o.dampening), neg_lr = static_cast<T>(-lr);
  for (int64_t i = 0; i < n; ++i) {
    T g = o.maximize ? -grad[i] : grad[i];
    if (weight_decay != 0.0) g = std::fma(wd, p[i], g);                          // g + wd p
    if (o.momentum != 0.0) {
      buf[i] = has_buf ? std::fma(keep, g, buf[i] * momentum) : g;             // m buf + (1 - d) g
      g = o.nesterov ? std::fma(momentum, buf[i], g) : buf[i];                 // g + m buf, or buf
    }
    p[i] = std::fma(neg_lr, g, p[i]);                                           // p - lr g
  }
}

}  // namespace

SGD::SGD(const std::vector<Tensor>& params, SGDOptions options) : SGD(single_group(params), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options)
    : Optimizer("SGD", std::move(groups), options.lr, options.weight_decay, sgd_state_names(options)),
      options_(options) {
  check_non_negative("momentum value", options.momentum);
  if (options.nesterov && (options.momentum <= 0.0 || options.dampening != 0.0)) {
    throw Error("SGD: Nesterov momentum requires a momentum and zero dampening");
  }
}

void SGD::step() {
  NoGradGuard no_grad;
  const bool use_buf = options_.momentum != 0.0;
  for_each_with_grad([&](const Group& group, Slot& slot, const Tensor& grad) {
    bool fresh = true;
    Tensor buf = use_buf ? state_of(slot, 0, fresh) : Tensor();  // momentum_buffer
    with_floating_type(slot, [&](auto zero) {
      using T = decltype(zero);
      sgd_update(slot.param.data_ptr<T>(), grad.data_ptr<T>(), use_buf ? buf.data_ptr<T>() : nullptr,
                 slot.param.numel(), options_, group.lr, group.weight_decay, !fresh);
    });
    mark_written(slot.param);
  });
}

}  // namespace tg::optim
