// optim/adam.h — Adam and AdamW, as torch.optim.Adam / torch.optim.AdamW (torch 1.13).
//
// At step t (counted per parameter), with g = grad (negated when maximize):
//   Adam:   g = g + weight_decay * p              (L2 penalty, coupled into the gradient)
//   AdamW:  p = p * (1 - lr * weight_decay)       (decoupled weight decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   v_max = max(v_max, v)                         (amsgrad; v_max replaces v below)
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//
//   tg::optim::AdamW opt(model.named_parameters(), {.lr = 4e-4, .weight_decay = 0.1});
//
// Read adam_step_reference in optim/adam.cpp next: the update above, one loop over a parameter.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "optim/optimizer.h"

namespace tg::optim {

// Defaults as PyTorch's: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0 for Adam and
// 0.01 for AdamW (an unset weight_decay takes the class's default).
struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  std::optional<double> weight_decay = std::nullopt;  // unset: 0 for Adam, 0.01 for AdamW
  bool amsgrad = false;
  bool maximize = false;
};

// State per parameter: "step" (a float32 scalar, as torch 1.13 keeps it), "exp_avg" (m),
// "exp_avg_sq" (v) and, with amsgrad, "max_exp_avg_sq" (v_max).
class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, AdamOptions options = {}) : Adam("Adam", std::move(groups), options, false) {}
  Adam(const NamedTensors& params, AdamOptions options = {}) : Adam(single_group(params), options) {}
  Adam(const std::vector<Tensor>& params, AdamOptions options = {});
  void step() override;
  const AdamOptions& options() const { return options_; }

 protected:
  // decoupled: AdamW's weight decay, applied to the parameter instead of the gradient.
  Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions options, bool decoupled);

 private:
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamOptions options = {}) : Adam("AdamW", std::move(groups), options, true) {}
  AdamW(const NamedTensors& params, AdamOptions options = {}) : AdamW(single_group(params), options) {}
  AdamW(const std::vector<Tensor>& params, AdamOptions options = {});
};

}  // namespace tg::optim
