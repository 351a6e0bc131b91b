// 100 steps of train_gpt's training loop (train/trainer.h: GPT with dropout, AdamW,
// gradient clipping, the lr schedule) with the fast kernels off and on: the same seed gives the
// same batches and dropout masks, and every step's loss agrees within 1e-5 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "train/corpus.h"
#include "train/trainer.h"

namespace tg {
namespace {

std::vector<double> losses_of_100_steps(bool fast) {
  FastKernelsGuard switch_(fast);
  train::TrainOptions o;  // a small GPT with dropout: the 200 steps take a fraction of a second
  o.steps = 100;
  o.batch = 4;
  o.model = {.context_length = 16, .emb_dim = 16, .n_heads = 2, .n_layers = 2, .drop_rate = 0.1};
  o.warmup = 10;
  train::Trainer trainer(o, train::builtin_corpus(20000, 11));
  std::vector<double> losses;
  for (int step = 0; step < 100; ++step) losses.push_back(trainer.train_step().loss);
  return losses;
}

TEST(FastKernelsTraining, HundredGPTStepsWithDropoutGiveTheSameLossesWithTheSwitchOffAndOn) {
  const std::vector<double> off = losses_of_100_steps(false), on = losses_of_100_steps(true);
  ASSERT_EQ(off.size(), on.size());
  for (size_t step = 0; step < on.size(); ++step) {
    ASSERT_LE(std::fabs(off[step] - on[step]), 1e-5 * std::fabs(on[step]))
        << "step " << step + 1 << ": loss " << off[step] << " with the fast kernels off, " << on[step] << " on";
  }
  EXPECT_LT(on.back(), on.front());  // it trained
}

}  // namespace
}  // namespace tg
