// optim/lr_scheduler.h — learning-rate schedules, as torch.optim.lr_scheduler.LambdaLR.
//
// A schedule is a factor of the step number; the scheduler sets every group's lr to
//   lr = base_lr * factor(step)
// where base_lr is the group's lr when the scheduler was made. As in PyTorch, making the
// scheduler applies factor(0), and each step() (called after opt.step()) moves to the next step:
//
//   tg::optim::AdamW opt(model.named_parameters(), {.lr = 5e-4, .weight_decay = 0.1});
//   tg::optim::LambdaLR sched(opt, tg::optim::warmup_cosine(100, 2000, 0.1));
//   for (...) { ...; opt.step(); sched.step(); }
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "optim/optimizer.h"

namespace tg::optim {

// The factors (each a plain function of the step, so a training loop may also call it):
//   constant()                      1
//   warmup_cosine(W, S, min_factor) s / W for s < W (linear warmup from 0), then a half cosine
//                                   from 1 down to min_factor at step S, and min_factor after:
//                                   min_factor + (1 - min_factor) * (1 + cos(pi * (s - W) / (S - W))) / 2
//   any std::function<double(int64_t)> of your own, as LambdaLR's lr_lambda.
using LRFactor = std::function<double(int64_t step)>;
LRFactor constant();
LRFactor warmup_cosine(int64_t warmup_steps, int64_t total_steps, double min_factor = 0.0);

class LambdaLR {
 public:
  // Keeps a reference to opt, which must outlive the scheduler.
  LambdaLR(Optimizer& opt, LRFactor factor);
  void step();  // to the next step: every group's lr = base_lr * factor(step)
  std::vector<double> get_last_lr() const { return last_lr_; }
  int64_t last_step() const { return last_step_; }  // PyTorch's last_epoch

 private:
  void apply();
  Optimizer& opt_;
  LRFactor factor_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_step_ = 0;
};

}  // namespace tg::optim
