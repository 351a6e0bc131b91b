// The training step's guard (train/trainer.h): a step whose loss or gradients' total norm
// is inf or nan never reaches the model. With --on-nonfinite error it is an error that leaves
// the model and the optimizer exactly as they were; with skip the update is dropped and the run
// goes on. Finite steps are unchanged by the guard (the parity and resume tests check that).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "train/corpus.h"
#include "train/trainer.h"
#include "test_util.h"

namespace tg {
namespace {

using test::expect_error;
using test::same_bytes;

train::TrainOptions tiny_options(const std::string& on_nonfinite, double grad_clip) {
  train::TrainOptions o;
  o.batch = 2;
  o.model.context_length = 8;
  o.model.emb_dim = 8;
  o.model.n_heads = 2;
  o.model.n_layers = 1;
  o.steps = 10;
  o.warmup = 1;
  o.grad_clip = grad_clip;
  o.on_nonfinite = on_nonfinite;
  return o;
}

const std::string& text() {
  static const std::string t = train::builtin_corpus(4000, 3);
  return t;
}

// One output row of +inf: every logit of that class is +-inf or nan, so the loss is nan.
void poison_output_row(train::Trainer& t) {
  NoGradGuard no_grad;
  t.gpt().out_head->weight.narrow(0, 0, 1).fill_(std::numeric_limits<double>::infinity());
}

struct Snapshot {
  nn::NamedTensors model, optimizer;
};

Snapshot snapshot(train::Trainer& t) {
  Snapshot s;
  for (const auto& [name, v] : t.model().state_dict()) s.model.push_back({name, v.clone()});
  for (const auto& [name, v] : t.optimizer().state_dict()) s.optimizer.push_back({name, v.clone()});
  return s;
}

void expect_unchanged(train::Trainer& t, const Snapshot& before) {
  const nn::NamedTensors model = t.model().state_dict(), optimizer = t.optimizer().state_dict();
  ASSERT_EQ(model.size(), before.model.size());
  ASSERT_EQ(optimizer.size(), before.optimizer.size());
  for (size_t i = 0; i < model.size(); ++i) EXPECT_TRUE(same_bytes(model[i].second, before.model[i].second)) << model[i].first;
  for (size_t i = 0; i < optimizer.size(); ++i)
    EXPECT_TRUE(same_bytes(optimizer[i].second, before.optimizer[i].second)) << optimizer[i].first;
}

TEST(TrainerNonFinite, ErrorModeNamesTheStepAndLeavesModelAndOptimizerAsTheyWere) {
  for (const double clip : {0.0, 1.0}) {
    SCOPED_TRACE("grad_clip " + std::to_string(clip));
    train::Trainer t(tiny_options("error", clip), text());
    EXPECT_TRUE(std::isfinite(t.train_step().loss));  // a good step first, so AdamW has state
    poison_output_row(t);
    const Snapshot before = snapshot(t);
    expect_error([&] { t.train_step(); },
                 {"step 2: the loss (nan) or the gradients' total norm (nan) is not finite; the model was not updated",
                  "--on-nonfinite skip"});
    EXPECT_EQ(t.step(), 1);
    expect_unchanged(t, before);
    for (const Tensor& p : t.model().parameters()) EXPECT_FALSE(p.grad().defined());  // no nan left behind
  }
}

TEST(TrainerNonFinite, SkipModeDropsTheUpdateAndGoesOn) {
  for (const double clip : {0.0, 1.0}) {
    SCOPED_TRACE("grad_clip " + std::to_string(clip));
    train::Trainer t(tiny_options("skip", clip), text());
    t.train_step();
    poison_output_row(t);
    const Snapshot before = snapshot(t);
    for (int k = 0; k < 3; ++k) {
      const train::Trainer::StepResult r = t.train_step();
      EXPECT_TRUE(r.skipped);
      EXPECT_TRUE(std::isnan(r.loss));
    }
    EXPECT_EQ(t.step(), 4);  // the steps (and their batches) are used up
    expect_unchanged(t, before);
  }
}

TEST(TrainerNonFinite, FiniteStepsReportTheirGradientNormAndAreNotSkipped) {
  train::Trainer t(tiny_options("skip", 0.0), text());
  for (int k = 0; k < 3; ++k) {
    const train::Trainer::StepResult r = t.train_step();
    EXPECT_FALSE(r.skipped);
    EXPECT_TRUE(std::isfinite(r.grad_norm) && r.grad_norm > 0) << r.grad_norm;
  }
}

}  // namespace
}  // namespace tg
