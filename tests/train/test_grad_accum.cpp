// --grad-accum N: a step averages the gradients of N micro-batches of --batch B sequences, the
// same N*B sequences in the same order that --batch N*B draws. Without dropout the two train the
// same model (per-step loss within 1e-6 relative), and the activations, the bulk of a step's
// memory, are those of B sequences, not N*B.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "autograd/ops.h"
#include "autograd/runtime/memory.h"
#include "train/corpus.h"
#include "train/trainer.h"

namespace tg {
namespace {

train::TrainOptions options(int64_t batch, int64_t grad_accum) {
  train::TrainOptions o;
  o.batch = batch;
  o.grad_accum = grad_accum;
  o.model.context_length = 32;
  o.model.emb_dim = 32;
  o.model.n_heads = 4;
  o.model.n_layers = 2;
  o.model.drop_rate = 0.0;
  o.steps = 40;
  o.warmup = 5;
  o.lr = 3e-3;
  o.eval_batches = 2;
  return o;
}

const std::string& text() {
  static const std::string t = train::builtin_corpus(30000, 3);
  return t;
}

TEST(GradAccum, MicroBatchesTrainTheSameModelAsOneBigBatch) {
  for (const auto& [batch, accum] : {std::pair<int64_t, int64_t>{8, 2}, {4, 4}, {5, 3}}) {
    train::Trainer big(options(batch * accum, 1), text());
    train::Trainer micro(options(batch, accum), text());
    double worst = 0;
    for (int step = 1; step <= 40; ++step) {
      const double want = big.train_step().loss, got = micro.train_step().loss;
      worst = std::max(worst, std::abs(got - want) / std::abs(want));
      ASSERT_LE(std::abs(got - want), 1e-6 * std::abs(want))
          << "--batch " << batch << " --grad-accum " << accum << ", step " << step << ": " << got << " vs " << want;
    }
    // the models agree too, not only the losses
    const auto want = big.model().named_parameters(), got = micro.model().named_parameters();
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(allclose(got[i].second, want[i].second, 1e-4, 1e-6)) << want[i].first;
    }
    std::cout << "  --batch " << batch << " --grad-accum " << accum << " vs --batch " << batch * accum
              << ": worst relative loss difference over 40 steps " << worst << "\n";
  }
}

TEST(GradAccum, OneMicroBatchIsThePlainStep) {
  train::Trainer a(options(6, 1), text()), b(options(6, 1), text());
  for (int step = 0; step < 5; ++step) EXPECT_EQ(a.train_step().loss, b.train_step().loss);
}

// train_gpt's default model (context 64, width 64, 4 heads, 2 layers)
int64_t peak_step_bytes(int64_t batch, int64_t accum) {
  train::TrainOptions o = options(batch, accum);
  o.model = train::TrainOptions{}.model;
  train::Trainer t(o, text());
  t.train_step();  // AdamW's state exists from here on
  reset_peak_memory_stats();
  t.train_step();
  return memory_stats().peak_bytes;
}

TEST(GradAccum, PeakMemoryIsThatOfOneMicroBatch) {
  const int64_t big = peak_step_bytes(32, 1), micro = peak_step_bytes(8, 4);
  std::cout << "  peak tensor memory of a step: --batch 32 " << big / 1024 << " KiB, --batch 8 --grad-accum 4 "
            << micro / 1024 << " KiB (" << static_cast<double>(micro) / static_cast<double>(big) << "x)\n";
  EXPECT_LE(static_cast<double>(micro), 0.35 * static_cast<double>(big));
}

}  // namespace
}  // namespace tg
