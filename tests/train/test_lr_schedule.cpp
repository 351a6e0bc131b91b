// The learning rate of a run (train::learning_rate) and of a run resumed with another --steps
// (train::continued_schedule): the plain schedule is optim::warmup_cosine's, bit for bit, and a
// resumed run's rate goes on from where it was, with no jump, down to --min-lr at the new total.
// examples/pytorch/train_gpt.py's lr_at and continued_schedule are the same sums: the pinned values
// below are what they give.
#include <gtest/gtest.h>

#include <cmath>

#include "optim/lr_scheduler.h"
#include "train/trainer.h"

namespace tg {
namespace {

train::TrainOptions cosine(int64_t steps) {
  train::TrainOptions o;
  o.lr = 2e-3;
  o.min_lr = 2e-4;
  o.warmup = 2;
  o.steps = steps;
  return o;
}

TEST(LearningRate, ThePlainScheduleIsWarmupCosineBitForBit) {
  const train::TrainOptions o = cosine(20);
  const optim::LRFactor factor = optim::warmup_cosine(2, 20, 0.1);
  for (int64_t step = 0; step <= 22; ++step) EXPECT_EQ(train::learning_rate(o, step), 2e-3 * factor(step)) << step;
  train::TrainOptions constant = o;
  constant.lr_schedule = "constant";
  EXPECT_EQ(train::learning_rate(constant, 15), 2e-3);
}

TEST(LearningRate, ADecayStartHoldsThePeakThenDecaysFromDecayLr) {
  train::TrainOptions o = cosine(20);
  o.decay_start = 10;
  EXPECT_EQ(train::learning_rate(o, 1), 1e-3);  // the warmup as before
  EXPECT_EQ(train::learning_rate(o, 5), 2e-3);  // held
  EXPECT_EQ(train::learning_rate(o, 10), 2e-3);
  EXPECT_LT(train::learning_rate(o, 11), 2e-3);
  EXPECT_DOUBLE_EQ(train::learning_rate(o, 20), 2e-4);
  o.decay_lr = 1e-3;
  EXPECT_EQ(train::learning_rate(o, 10), 1e-3);
  EXPECT_DOUBLE_EQ(train::learning_rate(o, 15), 2e-4 + (1e-3 - 2e-4) * 0.5);  // half way
}

TEST(LearningRate, AResumeWithMoreStepsGoesOnFromTheRateItHadWithoutAJump) {
  const train::TrainOptions planned = cosine(20);
  train::TrainOptions more = planned;
  more.steps = 40;
  // before: the whole cosine recomputed for 40 steps, a jump up at step 10
  EXPECT_GT(train::learning_rate(more, 10), train::learning_rate(planned, 10) * 1.2);
  const train::TrainOptions resumed = train::continued_schedule(planned, more, 10);
  EXPECT_EQ(resumed.decay_start, 10);
  EXPECT_EQ(resumed.decay_lr, train::learning_rate(planned, 10));
  EXPECT_EQ(train::learning_rate(resumed, 10), train::learning_rate(planned, 10));  // the step it resumes at
  EXPECT_DOUBLE_EQ(train::learning_rate(resumed, 10), 0.0012562833599002374);  // examples/pytorch's lr_at
  EXPECT_DOUBLE_EQ(train::learning_rate(resumed, 11), 0.0012533901445170947);
  EXPECT_DOUBLE_EQ(train::learning_rate(resumed, 39), 0.0002028932153831427);
  EXPECT_DOUBLE_EQ(train::learning_rate(resumed, 40), 2e-4);
  for (int64_t step = 11; step <= 40; ++step) {  // down, in small steps
    const double before = train::learning_rate(resumed, step - 1), now = train::learning_rate(resumed, step);
    EXPECT_LE(now, before) << step;
    EXPECT_LT(before - now, 1e-4) << step;
  }
  // a second resume, with more again, goes on from the first one's schedule
  train::TrainOptions again = resumed;
  again.steps = 60;
  const train::TrainOptions twice = train::continued_schedule(resumed, again, 25);
  EXPECT_EQ(twice.decay_start, 25);
  EXPECT_EQ(train::learning_rate(twice, 25), train::learning_rate(resumed, 25));
  EXPECT_DOUBLE_EQ(train::learning_rate(twice, 60), 2e-4);
  // fewer steps: the rest of the decay squeezed, still from the rate it had
  train::TrainOptions fewer = planned;
  fewer.steps = 15;
  const train::TrainOptions squeezed = train::continued_schedule(planned, fewer, 10);
  EXPECT_EQ(train::learning_rate(squeezed, 10), train::learning_rate(planned, 10));
  EXPECT_DOUBLE_EQ(train::learning_rate(squeezed, 15), 2e-4);
}

TEST(LearningRate, ARunThatHadEndedStaysAtMinLr) {
  const train::TrainOptions planned = cosine(10);
  train::TrainOptions more = planned;
  more.steps = 30;
  const train::TrainOptions resumed = train::continued_schedule(planned, more, 10);
  for (int64_t step = 10; step <= 30; ++step) EXPECT_DOUBLE_EQ(train::learning_rate(resumed, step), 2e-4) << step;
  train::TrainOptions zero = planned;  // --min-lr 0: the rate stays 0, not --lr
  zero.min_lr = 0;
  train::TrainOptions zero_more = zero;
  zero_more.steps = 30;
  const train::TrainOptions zero_resumed = train::continued_schedule(zero, zero_more, 10);
  EXPECT_EQ(zero_resumed.decay_lr, 0.0);
  EXPECT_EQ(train::learning_rate(zero_resumed, 20), 0.0);
}

TEST(LearningRate, TheSameStepsAWarmupOrAConstantRateChangeNothing) {
  const train::TrainOptions planned = cosine(20);
  auto unchanged = [&](const train::TrainOptions& resumed, int64_t step) {
    const train::TrainOptions after = train::continued_schedule(planned, resumed, step);
    EXPECT_EQ(after.decay_start, resumed.decay_start);
    EXPECT_EQ(after.decay_lr, resumed.decay_lr);
  };
  unchanged(planned, 10);  // the same --steps: bit for bit as a run never stopped
  train::TrainOptions more = planned;
  more.steps = 40;
  unchanged(more, 1);  // in the warmup: its rate does not depend on --steps
  unchanged(more, 2);
  train::TrainOptions constant = more;
  constant.lr_schedule = "constant";
  unchanged(constant, 10);
}

}  // namespace
}  // namespace tg
