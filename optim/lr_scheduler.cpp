// optim/lr_scheduler.cpp — LambdaLR and the schedule factors.
#include "optim/lr_scheduler.h"

#include <cmath>
#include <numbers>
#include <string>

#include "autograd/error.h"

namespace tg::optim {

LRFactor constant() {
  return [](int64_t) { return 1.0; };
}

LRFactor warmup_cosine(int64_t warmup_steps, int64_t total_steps, double min_factor) {
  if (warmup_steps < 0 || total_steps <= warmup_steps) {
    throw Error("warmup_cosine: need 0 <= warmup_steps < total_steps, got warmup_steps " +
                std::to_string(warmup_steps) + " and total_steps " + std::to_string(total_steps));
  }
  if (!(min_factor >= 0.0 && min_factor <= 1.0)) {
    throw Error("warmup_cosine: min_factor must be in [0, 1], got " + std::to_string(min_factor));
  }
  return [=](int64_t step) {
    if (step < warmup_steps) return static_cast<double>(step) / static_cast<double>(warmup_steps);
    if (step >= total_steps) return min_factor;
    const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
    return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  };
}

LambdaLR::LambdaLR(Optimizer& opt, LRFactor factor) : opt_(opt), factor_(std::move(factor)) {
  if (!factor_) throw Error("LambdaLR: the factor function is empty");
  for (const Optimizer::Group& group : opt_.param_groups()) base_lrs_.push_back(group.lr);
  apply();
}

void LambdaLR::step() {
  ++last_step_;
  apply();
}

void LambdaLR::apply() {
  last_lr_.clear();
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    const double lr = base_lrs_[g] * factor_(last_step_);
    opt_.param_groups()[g].lr = lr;
    last_lr_.push_back(lr);
  }
}

}  // namespace tg::optim
