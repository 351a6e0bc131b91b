// nn::Module and the layers against PyTorch 1.13 (tests/reference/module_torch.json): the same
// seed gives the same state_dict (names, order, values), the same output and gradients, and the
// module prints as PyTorch prints it.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <functional>
#include <map>
#include <string>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "nn/nn.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::error_of;
using test::has_part;

Tensor decode(const json::Value& t) { return test::decode_reference(t); }
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  return test::all_close(got, want, atol, rtol);
}

const json::Value& reference() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/module_torch.json");
  return doc["cases"];
}

// The C++ twin of each reference case, built in the same order as the Python one.
std::shared_ptr<Module> build(const std::string& id) {
  static const std::map<std::string, std::function<std::shared_ptr<Module>()>> makers = {
      {"linear", [] { return std::make_shared<Linear>(3, 2); }},
      {"linear_no_bias", [] { return std::make_shared<Linear>(3, 2, false); }},
      {"sequential_mlp", [] {
         return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
             std::make_shared<Linear>(4, 8), std::make_shared<GELU>("tanh"), std::make_shared<Linear>(8, 2)});
       }},
      {"layer_norm", [] { return std::make_shared<LayerNorm>(5); }},
      {"sequential_norm_relu_softmax", [] {
         return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
             std::make_shared<LayerNorm>(4, 1e-3), std::make_shared<ReLU>(), std::make_shared<Linear>(4, 4),
             std::make_shared<Softmax>(-1)});
       }},
      {"embedding", [] { return std::make_shared<Embedding>(6, 3); }},
      {"dropout_repr", [] { return std::make_shared<Dropout>(0.25); }},
      {"self_attention_v1", [] { return std::make_shared<SelfAttention_v1>(3, 2); }},
      {"self_attention_v2_bias", [] { return std::make_shared<SelfAttention_v2>(3, 2, true); }},
      {"causal_attention", [] { return std::make_shared<CausalAttention>(3, 2, 6, 0.0); }},
      {"causal_attention_dropout", [] { return std::make_shared<CausalAttention>(4, 3, 8, 0.5); }},
      {"mha_wrapper", [] { return std::make_shared<MultiHeadAttentionWrapper>(3, 2, 6, 0.0, 2); }},
      {"multi_head_attention", [] { return std::make_shared<MultiHeadAttention>(3, 2, 6, 0.0, 2); }},
      {"multi_head_attention_4_heads_dropout", [] { return std::make_shared<MultiHeadAttention>(8, 8, 10, 0.1, 4, true); }},
      {"module_list", [] {
         return std::make_shared<ModuleList>(std::initializer_list<std::shared_ptr<Module>>{
             std::make_shared<Linear>(2, 2),
             std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
                 std::make_shared<Linear>(2, 3), std::make_shared<GELU>()})});
       }},
  };
  return makers.at(id)();
}

// The largest |got - want|, and |got - want| / |want| where |want| >= 1e-3 (a relative error of a
// value that is 0 up to round-off says nothing), over a tensor (for the printed table).
void track_worst(const Tensor& got, const Tensor& want, double& worst_abs, double& worst_rel) {
  const auto g = got.tolist<double>(), w = want.tolist<double>();
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
    const double diff = std::abs(g[i] - w[i]);
    worst_abs = std::max(worst_abs, diff);
    if (std::abs(w[i]) >= 1e-3) worst_rel = std::max(worst_rel, diff / std::abs(w[i]));
  }
}

TEST(ModuleVsTorch, SameSeedSameStateDictOutputGradientsAndPrinting) {
  const json::Value& cases = reference();
  ASSERT_GE(cases.size(), 15u);
  std::cout << "  layer vs PyTorch (output, input and parameter gradients): worst abs, worst rel error\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const json::Value& c = cases[i];
    const std::string id = c["id"].as_string();
    manual_seed(c["seed"].as_uint64());
    std::shared_ptr<Module> m = build(id);
    EXPECT_EQ(m->repr(), c["repr"].as_string()) << id;
    EXPECT_EQ(m->num_parameters(), c["num_parameters"].as_int64()) << id;
    const NamedTensors sd = m->state_dict();
    ASSERT_EQ(sd.size(), c["state_dict"].size()) << id;
    for (size_t k = 0; k < sd.size(); ++k) {
      EXPECT_EQ(sd[k].first, c["state_dict"][k][0].as_string()) << id;
      // initial values are drawn bit for bit as PyTorch draws them
      EXPECT_TRUE(close(sd[k].second, decode(c["state_dict"][k][1]), 0, 0)) << id << " " << sd[k].first;
    }
    if (!c.contains("x")) continue;
    Tensor x = decode(c["x"]).requires_grad_();
    manual_seed(1001);  // what dropout draws inside forward (as the script)
    Tensor y = m->forward(x);
    EXPECT_TRUE(close(y, decode(c["y"]), 1e-6, 1e-5)) << id << " output";
    y.sum().backward();
    EXPECT_TRUE(close(x.grad(), decode(c["x_grad"]), 1e-6, 1e-5)) << id << " input gradient";
    double worst_abs = 0, worst_rel = 0;
    track_worst(y, decode(c["y"]), worst_abs, worst_rel);
    track_worst(x.grad(), decode(c["x_grad"]), worst_abs, worst_rel);
    const NamedTensors params = m->named_parameters();
    ASSERT_EQ(params.size(), c["grads"].size()) << id;
    for (size_t k = 0; k < params.size(); ++k) {
      EXPECT_EQ(params[k].first, c["grads"][k][0].as_string()) << id;
      EXPECT_TRUE(close(params[k].second.grad(), decode(c["grads"][k][1]), 1e-6, 1e-5)) << id << " " << params[k].first;
      track_worst(params[k].second.grad(), decode(c["grads"][k][1]), worst_abs, worst_rel);
    }
    std::printf("  %-40s %.2e  %.2e\n", id.c_str(), worst_abs, worst_rel);
  }
}

TEST(Module, TrainAndEvalReachEverySubmodule) {
  auto inner = std::make_shared<Dropout>(0.5);
  Sequential s{std::make_shared<Linear>(2, 2), std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{inner})};
  EXPECT_TRUE(inner->is_training());
  s.eval();
  EXPECT_FALSE(inner->is_training());
  Tensor x = ones({4, 2});
  EXPECT_TRUE(close(inner->forward(x), x, 0, 0));  // identity in eval
  s.train();
  EXPECT_TRUE(inner->is_training());
}

TEST(Module, LoadStateDictReportsEveryProblemAndChangesNothing) {
  manual_seed(1);
  Sequential s{std::make_shared<Linear>(3, 2), std::make_shared<Linear>(2, 1, false)};
  const NamedTensors before = s.state_dict();
  std::vector<std::vector<double>> bytes_before;
  for (auto& [n, t] : before) bytes_before.push_back(t.tolist<double>());
  NamedTensors bad = {{"0.weight", zeros({3, 3})}, {"0.bias", zeros({2}, kFloat64)}, {"2.weight", zeros({1})}};
  const std::string e = error_of([&] { s.load_state_dict(bad); });
  EXPECT_TRUE(has_part(e, "load_state_dict: 4 problems loading into Sequential"));
  EXPECT_TRUE(has_part(e, "'0.weight' has shape (3,3), expected (2,3)"));
  EXPECT_TRUE(has_part(e, "'0.bias' has dtype float64, expected float32"));
  EXPECT_TRUE(has_part(e, "missing key '1.weight'"));
  EXPECT_TRUE(has_part(e, "unexpected key '2.weight'"));
  const NamedTensors after = s.state_dict();
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].second.tolist<double>(), bytes_before[i]);

  Sequential t{std::make_shared<Linear>(3, 2), std::make_shared<Linear>(2, 1, false)};
  t.load_state_dict(before);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(t.state_dict()[i].second.tolist<double>(), bytes_before[i]);
  EXPECT_TRUE(t.state_dict()[0].second.requires_grad());  // still a parameter, and a leaf
  EXPECT_TRUE(t.state_dict()[0].second.is_leaf());
}

struct TwoLayer : Module {
  std::shared_ptr<Linear> fc1, fc2;
  Tensor scale;
  TwoLayer() : Module("TwoLayer") {
    fc1 = register_module("fc1", std::make_shared<Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<Linear>(8, 2));
    scale = register_parameter("scale", ones({2}));
    register_buffer("mask", triu(ones({2, 2}), 1));
    register_buffer("scratch", zeros({2}), false);
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x))) * scale; }
};

TEST(Module, AUserModuleNeedsNoMacros) {
  TwoLayer m;
  std::vector<std::string> names;
  for (auto& [n, t] : m.state_dict()) names.push_back(n);
  // own parameters, own persistent buffers, then submodules: PyTorch's order
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "mask", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(m.named_buffers().size(), 2u);
  EXPECT_EQ(m.num_parameters(), 4 * 8 + 8 + 8 * 2 + 2 + 2);
  m.forward(ones({3, 4})).sum().backward();
  EXPECT_TRUE(m.fc1->weight.grad().defined());
  m.zero_grad();
  EXPECT_FALSE(m.fc1->weight.grad().defined());
  EXPECT_EQ(m.repr(), "TwoLayer(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
                      "  (fc2): Linear(in_features=8, out_features=2, bias=True)\n)");
}

TEST(Module, BadArgumentsAreNamed) {
  EXPECT_EQ(error_of([] { Linear(0, 2); }), "Linear: in_features must be positive, got 0");
  EXPECT_EQ(error_of([] { Linear(3, 2).forward(ones({2, 4})); }), "Linear: input of shape (2,4) must end in in_features = 3");
  EXPECT_EQ(error_of([] { Dropout(1.5); }), "Dropout: p must be between 0 and 1, got 1.5");
  EXPECT_EQ(error_of([] { GELU("fast"); }), "GELU: approximate must be \"none\" or \"tanh\", got \"fast\"");
  EXPECT_EQ(error_of([] { Sequential s; s[0]; }), "Sequential: index 0 is out of range for 0 modules");
  EXPECT_EQ(error_of([] { ModuleList().forward(ones({1})); }), "ModuleList: this module has no forward(x) taking one tensor");
}

// torch 1.13 has no nn.RMSNorm: its parameter, printing and forward are checked here, as PyTorch
// 2.4's nn.RMSNorm has them (the op's values against PyTorch are in OpsVsTorch).
TEST(Module, RMSNormHasAWeightOfOnesAndPrintsAsPyTorch) {
  RMSNorm with_eps(4, 1e-6), without_eps(3);
  EXPECT_EQ(with_eps.repr(), "RMSNorm((4,), eps=1e-06, elementwise_affine=True)");
  EXPECT_EQ(without_eps.repr(), "RMSNorm((3,), eps=None, elementwise_affine=True)");
  const auto params = with_eps.named_parameters();
  ASSERT_EQ(params.size(), 1u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[0].second.tolist<float>(), std::vector<float>(4, 1.0f));
  const Tensor x = tensor({{1.0, -2.0, 3.0, 0.5}, {0.0, 0.0, 0.0, 0.0}});
  with_eps.weight.detach().fill_(2.0);
  EXPECT_EQ(with_eps.forward(x).tolist<float>(), rms_norm(x, {4}, with_eps.weight, 1e-6).tolist<float>());
  EXPECT_EQ(SiLU().repr(), "SiLU()");
  EXPECT_EQ(error_of([] { RMSNorm(0); }), "RMSNorm: normalized_shape must be positive, got 0");
  EXPECT_EQ(error_of([] { RMSNorm(4, -1.0); }), "RMSNorm: eps must be at least 0, got -1.0");
}

}  // namespace
}  // namespace tg::nn

namespace tg::nn {
namespace {

// The six embeddings of "Your journey starts with one step" (notebook 003).
Tensor journey() {
  return tensor({{0.43, 0.15, 0.89}, {0.55, 0.87, 0.66}, {0.57, 0.85, 0.64},
                 {0.22, 0.58, 0.33}, {0.77, 0.25, 0.10}, {0.05, 0.80, 0.55}});
}

::testing::AssertionResult row_is(const Tensor& t, std::vector<double> want) {
  const auto got = t.tolist<double>();
  for (size_t i = 0; i < want.size(); ++i)
    if (std::abs(got[i] - want[i]) > 5e-5) return ::testing::AssertionFailure() << "got " << t;
  return ::testing::AssertionSuccess();
}

TEST(AttentionNotebook, ReproducesTheNotebooksNumbers) {
  manual_seed(789);
  SelfAttention_v2 sa(3, 2);
  EXPECT_TRUE(row_is(sa.forward(journey())[0], {-0.0739, 0.0713}));
  manual_seed(123);
  MultiHeadAttention mha(3, 2, 6, 0.0, 2);
  Tensor batch = stack({journey(), journey()});
  EXPECT_TRUE(row_is(mha.forward(batch)[0][0], {0.3190, 0.4858}));
}

TEST(AttentionNotebook, KeepsAttentionWeightsOnlyWhenAsked) {
  manual_seed(123);
  CausalAttention ca(3, 2, 6, 0.0);
  Tensor x = stack({journey()});
  ca.forward(x);
  EXPECT_FALSE(ca.attention_weights.defined());
  ca.keep_attention_weights = true;
  ca.forward(x);
  ASSERT_EQ(ca.attention_weights.sizes(), (Shape{1, 6, 6}));
  EXPECT_EQ(ca.attention_weights[0][0][1].item(), 0.0);  // the future is masked
  EXPECT_NEAR(ca.attention_weights[0][3].sum().item(), 1.0, 1e-6);
}

TEST(AttentionNotebook, BadInputsAreNamed) {
  EXPECT_EQ(error_of([] { MultiHeadAttention(3, 10, 6, 0.0, 3); }),
            "MultiHeadAttention: d_out (10) must be divisible by num_heads (3)");
  MultiHeadAttention mha(3, 4, 6, 0.0, 2);
  EXPECT_EQ(error_of([&] { mha.forward(ones({1, 7, 3})); }),
            "MultiHeadAttention: num_tokens (7) exceeds context_length (6)");
  EXPECT_EQ(error_of([&] { mha.forward(ones({7, 3})); }),
            "MultiHeadAttention: expected input of shape (b, num_tokens, 3), got (7,3)");
  CausalAttention ca(3, 2, 4, 0.0);
  EXPECT_EQ(error_of([&] { ca.forward(ones({1, 2, 5})); }),
            "CausalAttention: expected input of shape (b, num_tokens, 3), got (1,2,5)");
}

}  // namespace
}  // namespace tg::nn
