// train/train_loop.cpp — the training loop (see the header).
#include "train/train_loop.h"

#include <cmath>
#include <string>

#include "io/flags.h"  // Activity
#include "nn/module.h"         // python_float
#include "train/run_folder.h"

namespace tg::train {

LoopEnd train_loop(Trainer& trainer, const TrainOptions& o, RunLog& log, Progress& progress, const EncodedTask* task,
                   const volatile std::sig_atomic_t& interrupted) {
  auto save_all = [&] {
    save_run(trainer, o.out);
    log.write(o.out);
  };
  while (trainer.step() < o.steps) {
    const Activity training("training step " + std::to_string(trainer.step() + 1));
    LossRow row;
    row.lr = learning_rate(trainer.options(), trainer.step());
    const Trainer::StepResult result = trainer.train_step();
    row.step = trainer.step();
    row.train_loss = result.loss;
    if (result.skipped) {
      progress.message("step " + std::to_string(row.step) + ": loss " + nn::python_float(result.loss) +
                       ", gradient norm " + nn::python_float(result.grad_norm) +
                       ": not finite, update skipped (--on-nonfinite skip)");
    }
    progress.add_tokens(result.tokens);
    row.tokens_per_s = progress.tokens_per_s();
    row.elapsed_s = progress.elapsed_s();
    const bool out_of_time = o.max_minutes > 0 && progress.elapsed_s() >= 60.0 * o.max_minutes;
    const bool evaluate = row.step % o.eval_every == 0 || row.step == o.steps || out_of_time;
    if (evaluate) {
      const Trainer::Losses e = trainer.evaluate();
      row.val_loss = e.val;
      row.eval_train_loss = e.train;
      if (!std::isnan(e.val_bpb)) row.train_bpb = e.train_bpb;  // nan: a classifier's, which has none
      if (!std::isnan(e.val_bpb)) row.val_bpb = e.val_bpb;
      row.train_acc = e.train_acc;
      row.val_acc = e.val_acc;
      if (task) {
        const TaskScore t = score_task(trainer.model(), *task, products_dtype(o));
        row.task_acc = t.acc;
        row.task_acc_norm = t.acc_norm;
      }
      log.add(row);
      save_all();
      progress.eval_line(row);
    } else {
      log.add(row);
    }
    progress.update(row.step, result.loss);
    if (interrupted) {
      if (!evaluate) save_all();
      return LoopEnd::interrupted;
    }
    if (out_of_time) return LoopEnd::out_of_time;
  }
  return LoopEnd::finished;
}

}  // namespace tg::train
