// The switch between the plain code and the fast code (autograd/fast_kernels.h): read from
// TG_FAST_KERNELS at start, changed by set_fast_kernels, put back by FastKernelsGuard. Then the
// nn layers: with the switch off each attention forward runs the notebook's steps
// (masked_fill(-inf), / sqrt(d_k), softmax, dropout, @ values) and FeedForward its three layers;
// on, the fused ops. Outputs and gradients agree to float rounding, masks and dropout included.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "autograd/graph_dot.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/tape.h"
#include "nn/nn.h"
#include "models/gpt.h"
#include "models/generation/generate.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::all_close;
using test::leaf;
using test::normal_tensor;

// tests/CMakeLists.txt runs this test a second time with TG_FAST_KERNELS=0 in its environment.
TEST(FastKernels, FollowsTheEnvironmentVariableAtStart) {
  const char* env = std::getenv("TG_FAST_KERNELS");
  const bool off = env != nullptr && std::string(env) == "0";
  EXPECT_EQ(fast_kernels(), !off);
}

TEST(FastKernels, SetFastKernelsSwitchesItAndTheGuardPutsItBack) {
  const bool at_start = fast_kernels();
  {
    FastKernelsGuard outer(false);
    EXPECT_FALSE(fast_kernels());
    {
      FastKernelsGuard inner(true);
      EXPECT_TRUE(fast_kernels());
    }
    EXPECT_FALSE(fast_kernels());  // the inner guard put back the outer one's state
    set_fast_kernels(true);
    EXPECT_TRUE(fast_kernels());
  }
  EXPECT_EQ(fast_kernels(), at_start);  // the outer guard put back the state before it
}

using Forward = std::function<Tensor(const std::vector<Tensor>&)>;

// The output of forward(inputs) with dropout drawing from manual_seed(7), then the gradients of
// every input and every parameter of `module` after backward of sum(y * r).
std::vector<Tensor> run(Module& module, const std::vector<Tensor>& inputs, const Forward& forward) {
  module.zero_grad();
  std::vector<Tensor> leaves;
  for (const Tensor& x : inputs) leaves.push_back(leaf(x));
  manual_seed(7);
  Tensor y = forward(leaves);
  (y * normal_tensor(y.sizes(), 99, y.dtype())).sum().backward();
  std::vector<Tensor> out = {y.detach()};
  for (const Tensor& x : leaves) out.push_back(x.grad());
  for (const auto& [name, p] : module.named_parameters()) out.push_back(p.grad());
  return out;
}

void expect_same_with_the_switch_off_and_on(Module& module, const std::vector<Tensor>& inputs, const Forward& forward) {
  std::vector<Tensor> off, on;
  {
    FastKernelsGuard fast(false);
    off = run(module, inputs, forward);
  }
  {
    FastKernelsGuard fast(true);
    on = run(module, inputs, forward);
  }
  ASSERT_EQ(off.size(), on.size());
  for (size_t i = 0; i < on.size(); ++i) {
    EXPECT_TRUE(all_close(off[i], on[i], 1e-6, 1e-5)) << (i == 0 ? "output" : "gradient " + std::to_string(i));
  }
}

Forward plain(Module& module) {
  return [&module](const std::vector<Tensor>& in) { return module.forward(in[0]); };
}

TEST(FastKernelsLayers, NotebookAttentionLayersAgreeWithTheSwitchOffAndOn) {
  manual_seed(123);
  const Tensor x2d = normal_tensor({6, 3}, 1, kFloat32), x = normal_tensor({2, 6, 3}, 2, kFloat32);
  SelfAttention_v1 v1(3, 2);
  SelfAttention_v2 v2(3, 2);
  CausalAttention causal(3, 2, 6, 0.0);
  CausalAttention causal_dropout(3, 2, 6, 0.5);
  MultiHeadAttentionWrapper wrapper(3, 2, 6, 0.0, 2);
  CausalAttention causal_kept(3, 2, 6, 0.0);
  causal_kept.keep_attention_weights = true;
  expect_same_with_the_switch_off_and_on(v1, {x2d}, plain(v1));
  expect_same_with_the_switch_off_and_on(v2, {x2d}, plain(v2));
  expect_same_with_the_switch_off_and_on(causal, {x}, plain(causal));
  expect_same_with_the_switch_off_and_on(causal_dropout, {x}, plain(causal_dropout));
  expect_same_with_the_switch_off_and_on(wrapper, {x}, plain(wrapper));
  expect_same_with_the_switch_off_and_on(causal_kept, {x}, plain(causal_kept));
}

TEST(FastKernelsLayers, MultiHeadAttentionOptionsAgreeWithTheSwitchOffAndOn) {
  manual_seed(5);
  MultiHeadAttention mha(4, 4, 6, 0.0, 2, true);
  MultiHeadAttention mha_dropout(4, 4, 6, 0.3, 2);
  const Tensor x = normal_tensor({2, 3, 4}, 1, kFloat32), kv = normal_tensor({2, 5, 4}, 2, kFloat32);
  // batch row 1 has every key padded: its queries see nothing
  const Tensor padded = tensor({{false, false, true, false, true}, {true, true, true, true, true}});
  const Tensor some_padded = tensor({{false, true, false}, {false, false, true}});
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    expect_same_with_the_switch_off_and_on(mha, {x}, [&](const std::vector<Tensor>& in) {
      return mha.forward(in[0], {.causal = causal});
    });
    expect_same_with_the_switch_off_and_on(mha, {x, kv}, [&](const std::vector<Tensor>& in) {
      return mha.forward(in[0], {.kv = in[1], .causal = causal, .key_padding_mask = padded});
    });
    expect_same_with_the_switch_off_and_on(mha_dropout, {x, kv}, [&](const std::vector<Tensor>& in) {
      return mha_dropout.forward(in[0], {.kv = in[1], .causal = causal, .key_padding_mask = padded});
    });
    expect_same_with_the_switch_off_and_on(mha_dropout, {x}, [&](const std::vector<Tensor>& in) {
      return mha_dropout.forward(in[0], {.causal = causal, .key_padding_mask = some_padded});
    });
  }
  mha.keep_attention_weights = true;
  expect_same_with_the_switch_off_and_on(mha, {x, kv}, [&](const std::vector<Tensor>& in) {
    return mha.forward(in[0], {.kv = in[1], .key_padding_mask = padded});
  });
}

// Incremental decoding: 2 positions, then 1, then 3, each reading the cache.
TEST(FastKernelsLayers, GptAttentionWithAKVCacheAgreesWithTheSwitchOffAndOn) {
  manual_seed(11);
  models::CausalSelfAttention mha(models::GPTConfig{.vocab_size = 1, .context_length = 8, .emb_dim = 4, .n_heads = 2});
  const Tensor x = normal_tensor({2, 6, 4}, 3, kFloat32);
  NoGradGuard no_grad;
  std::vector<Tensor> outputs[2];
  for (bool fast : {false, true}) {
    FastKernelsGuard switch_(fast);
    models::KVCache cache;
    for (auto [start, length] : {std::pair<int64_t, int64_t>{0, 2}, {2, 1}, {3, 3}})
      outputs[fast].push_back(mha.forward(x.narrow(1, start, length), &cache, Tensor()));
  }
  for (size_t i = 0; i < outputs[0].size(); ++i)
    EXPECT_TRUE(all_close(outputs[0][i], outputs[1][i], 1e-6, 1e-5)) << "step " << i;
}

// One transformer block of C = 8, 2 heads, up to 6 tokens.
models::GPTConfig block_config(double drop_rate) {
  models::GPTConfig config;
  config.vocab_size = 11;
  config.context_length = 6;
  config.emb_dim = 8;
  config.n_heads = 2;
  config.n_layers = 1;
  config.drop_rate = drop_rate;
  return config;
}

TEST(FastKernelsLayers, GPTFeedForwardAndBlockAgreeWithTheSwitchOffAndOn) {
  manual_seed(3);
  models::FeedForward ff(8);
  models::TransformerBlock block(block_config(0.2));
  const Tensor x = normal_tensor({2, 5, 8}, 4, kFloat32);
  expect_same_with_the_switch_off_and_on(ff, {x}, plain(ff));
  expect_same_with_the_switch_off_and_on(block, {x}, plain(block));
  block.eval();
  expect_same_with_the_switch_off_and_on(block, {x}, plain(block));
}

// The branch is visible in the graph: off, the notebook's ops; on, the fused ones.
TEST(FastKernelsLayers, WithTheSwitchOffTheGraphHoldsTheNotebooksOpsAndNoFusedOne) {
  manual_seed(3);
  models::TransformerBlock block(block_config(0.0));
  const Tensor x = leaf(normal_tensor({2, 5, 8}, 4, kFloat32));
  for (bool fast : {false, true}) {
    FastKernelsGuard switch_(fast);
    const std::string graph = graph_dot(block.forward(x));
    for (const char* notebook_op : {"MaskedFillBackward0", "DivBackward0", "SoftmaxBackward0", "GeluBackward0"})
      EXPECT_EQ(test::has_part(graph, notebook_op), !fast) << notebook_op << (fast ? " on" : " off") << "\n" << graph;
    for (const char* fused_op : {"MaskedScaledAttentionBackward0", "FeedForwardBackward0"})
      EXPECT_EQ(test::has_part(graph, fused_op), fast) << fused_op << (fast ? " on" : " off") << "\n" << graph;
  }
}

}  // namespace
}  // namespace tg::nn
