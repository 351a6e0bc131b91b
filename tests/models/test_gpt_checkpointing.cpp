// tests/models/test_gpt_checkpointing.cpp — GPTModel::set_checkpointing (models/gpt.h): 20 training steps
// with dropout give bit-identical losses, gradients and weights with and without checkpointing,
// and the blocks keep less on the tape (measured).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "models/gpt.h"
#include "optim/adam.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::same_bytes;

const models::GPTConfig kConfig{.vocab_size = 37, .context_length = 16, .emb_dim = 32, .n_heads = 4, .n_layers = 3,
                        .drop_rate = 0.1, .qkv_bias = true, .tie_weights = true};

struct Trace {
  std::vector<double> losses;
  std::vector<Tensor> grads;    // the last step's, in parameters() order
  std::vector<Tensor> weights;  // after the last step
};

Trace train(models::Checkpointing mode, int steps) {
  manual_seed(11);
  models::GPTModel model(kConfig);
  model.set_checkpointing(mode);
  optim::AdamW opt(model.named_parameters(), {.lr = 3e-3, .weight_decay = 0.1});
  Generator batches(5);
  Trace trace;
  for (int s = 0; s < steps; ++s) {
    const Tensor x = randint(0, kConfig.vocab_size, {3, kConfig.context_length}, &batches);
    const Tensor y = randint(0, kConfig.vocab_size, {3, kConfig.context_length}, &batches);
    opt.zero_grad();
    Tensor loss = cross_entropy(model.forward(x).flatten(0, 1), y.flatten());
    loss.backward();
    trace.losses.push_back(loss.item<double>());
    if (s == steps - 1)
      for (const Tensor& p : model.parameters()) trace.grads.push_back(p.grad().clone());
    opt.step();
  }
  for (const Tensor& p : model.parameters()) trace.weights.push_back(p.detach().clone());
  return trace;
}

void expect_same(const Trace& got, const Trace& want) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) EXPECT_EQ(got.losses[i], want.losses[i]) << "step " << i + 1;
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t i = 0; i < got.grads.size(); ++i) EXPECT_TRUE(same_bytes(got.grads[i], want.grads[i])) << "grad " << i;
  for (size_t i = 0; i < got.weights.size(); ++i) EXPECT_TRUE(same_bytes(got.weights[i], want.weights[i])) << "weight " << i;
}

TEST(GPTActivationCheckpointing, TwentyStepsWithDropoutAreBitIdentical) {
  const Trace none = train(models::Checkpointing::none, 20);
  expect_same(train(models::Checkpointing::every, 20), none);
  expect_same(train(models::Checkpointing::ffn, 20), none);
}

// Bytes the blocks keep for backward: x (B,T,C) through every block, with the tape read after.
size_t blocks_saved_bytes(models::Checkpointing mode, const models::GPTConfig& config) {
  manual_seed(3);
  models::GPTModel model(config);
  model.set_checkpointing(mode);
  Tensor x = test::leaf(test::normal_tensor({2, config.context_length, config.emb_dim}, 4, kFloat32));
  Tensor h = x;
  for (const auto& block : model.trf_blocks->children()) h = block->forward(h);
  const size_t bytes = saved_bytes(tape_entries());
  h.sum().backward();
  return bytes;
}

TEST(GPTActivationCheckpointing, BlocksKeepLessForBackward) {
  const models::GPTConfig config{.vocab_size = 37, .context_length = 64, .emb_dim = 64, .n_heads = 4, .n_layers = 4,
                         .drop_rate = 0.1};
  const size_t none = blocks_saved_bytes(models::Checkpointing::none, config);
  const size_t every = blocks_saved_bytes(models::Checkpointing::every, config);
  const size_t ffn = blocks_saved_bytes(models::Checkpointing::ffn, config);
  const size_t x_bytes = 2 * 64 * 64 * 4;  // one block's input (B,T,C)
  EXPECT_EQ(every, 4 * x_bytes) << "every: each block keeps only its input";
  EXPECT_LE(4 * every, none);
  // ffn keeps norm2's output (B,T,C), which the feed-forward kept too, and no longer h (B,T,4C)
  // (nor, on the plain path, GELU's output): at least 4C per token and layer fewer
  EXPECT_GE(none - ffn, 4 * 4 * x_bytes);
}

TEST(GPTActivationCheckpointing, PeakTensorMemoryOfAStepIsLower) {
  const models::GPTConfig config{.vocab_size = 37, .context_length = 64, .emb_dim = 64, .n_heads = 4, .n_layers = 4};
  auto peak_of_step = [&](models::Checkpointing mode) {
    manual_seed(3);
    models::GPTModel model(config);
    model.set_checkpointing(mode);
    const Tensor idx = zeros({4, 64}, kInt64);
    reset_peak_memory_stats();
    const int64_t before = memory_stats().live_bytes;
    cross_entropy(model.forward(idx).flatten(0, 1), idx.flatten()).backward();
    return memory_stats().peak_bytes - before;
  };
  const int64_t none = peak_of_step(models::Checkpointing::none);
  EXPECT_LT(peak_of_step(models::Checkpointing::ffn), none);
  EXPECT_LT(peak_of_step(models::Checkpointing::every), peak_of_step(models::Checkpointing::ffn));
}

TEST(GPTActivationCheckpointing, NamesAndGeneration) {
  EXPECT_EQ(models::checkpointing_from_name("every"), models::Checkpointing::every);
  EXPECT_EQ(models::checkpointing_name(models::Checkpointing::ffn), "ffn");
  test::expect_error([] { models::checkpointing_from_name("all"); }, {"none, every or ffn", "\"all\""});
  // generation (no grad, a KV cache) is unchanged by the option
  manual_seed(2);
  models::GPTModel model(kConfig);
  model.eval();
  const Tensor idx = from_vector(std::vector<int64_t>{1, 2, 3}, {1, 3});
  NoGradGuard no_grad;
  const Tensor want = model.forward(idx);
  model.set_checkpointing(models::Checkpointing::every);
  EXPECT_EQ(model.checkpointing(), models::Checkpointing::every);
  models::GPTCache cache;
  EXPECT_TRUE(same_bytes(model.forward(idx, cache), want));
}

}  // namespace
}  // namespace tg::nn
