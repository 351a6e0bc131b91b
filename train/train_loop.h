// train/train_loop.h — the training loop of a run, on one screen: step, log, evaluate, save.
// train_gpt (examples/train_gpt.cpp) builds the Trainer and prints; this is what it runs.
#pragma once
#include <csignal>

#include "train/multiple_choice.h"
#include "train/options.h"
#include "train/run_log.h"
#include "train/trainer.h"

namespace tg::train {

// How the loop ended: at --steps, with --max-minutes spent (after a step, evaluated and saved),
// or interrupted (Ctrl-C or SIGTERM: the run saved at the step it was on).
enum class LoopEnd { finished, out_of_time, interrupted };

// Steps until o.steps. Each step adds a row to log (loss.csv); every o.eval_every steps, after the
// last and when the time is spent, both splits are evaluated (and task, --eval-task's items,
// scored; nullptr: none) and the run is saved into o.out with its loss.csv. interrupted: set by a
// signal handler; the loop saves and stops after the step it is on.
LoopEnd train_loop(Trainer& trainer, const TrainOptions& o, RunLog& log, Progress& progress, const EncodedTask* task,
                   const volatile std::sig_atomic_t& interrupted);

}  // namespace tg::train
