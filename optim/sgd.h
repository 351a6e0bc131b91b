// optim/sgd.h — stochastic gradient descent with momentum, as torch.optim.SGD (torch 1.13).
//
//   g   = grad (negated when maximize) + weight_decay * p
//   buf = g                                      on the first step
//   buf = momentum * buf + (1 - dampening) * g   after it
//   g   = g + momentum * buf  (nesterov)   or   buf
//   p   = p - lr * g
//
// State per parameter (momentum != 0 only): "momentum_buffer", shaped like the parameter.
//
//   tg::optim::SGD opt(model.named_parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
#pragma once
#include <optional>
#include <vector>

#include "optim/optimizer.h"

namespace tg::optim {

struct SGDOptions {
  std::optional<double> lr = std::nullopt;  // required (here or in every group), as in PyTorch
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, SGDOptions options);
  SGD(const NamedTensors& params, SGDOptions options) : SGD(single_group(params), options) {}
  SGD(const std::vector<Tensor>& params, SGDOptions options);
  void step() override;
  const SGDOptions& options() const { return options_; }

 private:
  SGDOptions options_;
};

}  // namespace tg::optim
