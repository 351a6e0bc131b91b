// Training and generation are bit-identical at any thread count: every reduction has a fixed
// order and fixed chunk boundaries that do not depend on the number of threads, and BLIS's
// products give the same bits on 1 and 2 threads.
//   - 100 steps of the GPT at 1, 2 and 3 threads: the same loss at every step and the same
//     parameters at the end, to the last bit.
//   - generation at GPT-2's widths (2 layers of 768, 12 heads, 50257 tokens: every matrix one
//     token reads is split over the threads by autograd/runtime/work_split.h's rules) at 1, 2, 3,
//     7 and 16 threads, more threads than cores included: the same ids, greedy and sampled, and
//     the same logits to the last bit.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "models/generation/generate.h"
#include "models/gpt.h"
#include "train/corpus.h"
#include "train/trainer.h"
#include "test_util.h"

namespace tg {
namespace {

struct TrainingRun {
  std::vector<double> losses;
  nn::NamedTensors params;
};

TrainingRun train_with_threads(int threads) {
  train::TrainOptions o;
  o.batch = 8;
  o.model.context_length = 32;
  o.model.emb_dim = 32;
  o.model.n_heads = 4;
  o.model.n_layers = 2;
  o.model.drop_rate = 0.1;
  o.steps = 100;
  o.warmup = 10;
  static const std::string text = train::builtin_corpus(30000, 5);
  set_num_threads(threads);
  train::Trainer t(o, text);
  TrainingRun r;
  for (int s = 0; s < o.steps; ++s) r.losses.push_back(t.train_step().loss);
  r.params = t.model().state_dict();
  return r;
}

TEST(ThreadIdentity, TrainingIsBitIdenticalAt1_2And3Threads) {
  const int before = get_num_threads();
  const TrainingRun one = train_with_threads(1);
  for (int threads : {2, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const TrainingRun many = train_with_threads(threads);
    for (size_t s = 0; s < one.losses.size(); ++s) {
      ASSERT_EQ(std::bit_cast<uint64_t>(many.losses[s]), std::bit_cast<uint64_t>(one.losses[s]))
          << "step " << s + 1 << ": loss " << many.losses[s] << " vs " << one.losses[s] << " at 1 thread";
    }
    for (size_t i = 0; i < one.params.size(); ++i)
      EXPECT_TRUE(test::same_bytes(many.params[i].second, one.params[i].second)) << one.params[i].first;
  }
  set_num_threads(before);
}

struct GenerationRun {
  Tensor greedy, sampled;  // (2, T + new) ids
  Tensor logits;           // (2, T + new, V) of the greedy ids, one forward
};

GenerationRun generate_with_threads(models::GPTModel& model, const Tensor& prompt, int threads) {
  set_num_threads(threads);
  GenerationRun r;
  models::SamplingOptions greedy;
  greedy.temperature = 0;
  r.greedy = models::generate(model, prompt, 8, greedy);
  models::SamplingOptions sampled;
  sampled.top_k = 50;
  Generator gen(7);
  r.sampled = models::generate(model, prompt, 8, sampled, &gen);
  NoGradGuard no_grad;
  r.logits = model.forward(r.greedy);
  return r;
}

TEST(ThreadIdentity, GenerationAtGPT2WidthsIsBitIdenticalAt1_2_3_7And16Threads) {
  const int before = get_num_threads();
  manual_seed(123);
  models::GPTModel model(models::GPTConfig{.vocab_size = 50257, .context_length = 48, .emb_dim = 768,
                                           .n_heads = 12, .n_layers = 2, .qkv_bias = true, .tie_weights = true});
  model.eval();
  Generator gen(5);
  const Tensor prompt = randint(0, 50257, {2, 20}, &gen);
  const GenerationRun one = generate_with_threads(model, prompt, 1);
  for (int threads : {2, 3, 7, 16}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const GenerationRun many = generate_with_threads(model, prompt, threads);
    EXPECT_TRUE(test::same_bytes(many.greedy, one.greedy));
    EXPECT_TRUE(test::same_bytes(many.sampled, one.sampled));
    EXPECT_TRUE(test::same_bytes(many.logits, one.logits));
  }
  set_num_threads(before);
}

}  // namespace
}  // namespace tg
