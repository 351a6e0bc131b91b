// tg::optim's behaviour around the update: bad settings and parameters refused with PyTorch's
// words, zero_grad as torch 1.13, the weight-decay split of a Module's parameters, state that
// saves and loads (and refuses what does not fit without changing anything), and the update
// itself being invisible to autograd except as an in-place write.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "test_util.h"

namespace tg::optim {
namespace {

using test::error_of;
using test::expect_error;
using test::has_part;
using test::leaf;

NamedTensors two_params() { return {{"w", leaf(ones({2, 3}))}, {"b", leaf(zeros({3}))}}; }

TEST(Optimizer, BadSettingsAreRefusedWithPyTorchsWords) {
  const NamedTensors p = two_params();
  EXPECT_TRUE(has_part(error_of([&] { SGD(p, {.lr = -0.1}); }), "SGD: Invalid learning rate: -0.1"));
  EXPECT_TRUE(has_part(error_of([&] { SGD(p, {}); }),
                       "SGD: parameter group 0 didn't specify a value of required optimization parameter lr"));
  EXPECT_TRUE(has_part(error_of([&] { SGD(p, {.lr = 0.1, .momentum = -1}); }), "SGD: Invalid momentum value: -1.0"));
  EXPECT_TRUE(has_part(error_of([&] { SGD(p, {.lr = 0.1, .weight_decay = -0.5}); }),
                       "SGD: Invalid weight_decay value: -0.5"));
  EXPECT_TRUE(has_part(error_of([&] { SGD(p, {.lr = 0.1, .nesterov = true}); }),
                       "SGD: Nesterov momentum requires a momentum and zero dampening"));
  EXPECT_TRUE(has_part(error_of([&] { SGD(p, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}); }),
                       "SGD: Nesterov momentum requires a momentum and zero dampening"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(p, {.lr = -1e-3}); }), "Adam: Invalid learning rate: -0.001"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(p, {.eps = -1e-8}); }), "Adam: Invalid epsilon value: -1e-08"));
  EXPECT_TRUE(has_part(error_of([&] { AdamW(p, {.betas = {1.0, 0.999}}); }),
                       "AdamW: Invalid beta parameter at index 0: 1.0"));
  EXPECT_TRUE(has_part(error_of([&] { AdamW(p, {.betas = {0.9, -0.1}}); }),
                       "AdamW: Invalid beta parameter at index 1: -0.1"));
  EXPECT_TRUE(has_part(error_of([&] { AdamW(p, {.weight_decay = -0.01}); }), "AdamW: Invalid weight_decay value: -0.01"));
  EXPECT_TRUE(has_part(error_of([&] { AdamW(std::vector<ParamGroup>{{p, -1.0, {}}}); }),
                       "AdamW: Invalid learning rate: -1.0"));
}

TEST(Optimizer, BadParametersAreRefused) {
  const NamedTensors p = two_params();
  EXPECT_TRUE(has_part(error_of([&] { Adam(NamedTensors{{"x", ones({2})}}); }),
                       "Adam: parameter group 0: parameter 'x' does not require grad"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(std::vector<Tensor>{leaf(ones({2})), ones({2})}); }),
                       "Adam: parameter group 0: parameter '1' does not require grad"));
  const Tensor non_leaf = p[0].second * 2.0;
  EXPECT_TRUE(has_part(error_of([&] { Adam(NamedTensors{{"y", non_leaf}}); }), "can't optimize a non-leaf Tensor ('y')"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(std::vector<ParamGroup>{{p, {}, {}}, {{p[1]}, 0.1, {}}}); }),
                       "Adam: parameter group 1: parameter 'b' appears more than once (some parameters appear in "
                       "more than one parameter group"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(NamedTensors{{"a", p[0].second}, {"a", p[1].second}}); }),
                       "two parameters are named 'a'"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(NamedTensors{}); }), "Adam: optimizer got an empty parameter list"));
  EXPECT_TRUE(has_part(error_of([&] { Adam(NamedTensors{{"i", arange(3)}}); }),
                       "parameter 'i' must be floating point, got int64"));
  // A gradient that does not fit its parameter cannot even be assigned.
  EXPECT_TRUE(has_part(error_of([&] { p[0].second.set_grad(zeros({3, 2})); }), "set_grad: gradient shape (3,2)"));
  EXPECT_TRUE(has_part(error_of([&] { p[0].second.set_grad(zeros({2, 3}, kFloat64)); }),
                       "set_grad: gradient dtype float64"));
}

// The update loops are compiled for float32 and float64 only. A bfloat16 parameter is floating
// point, so the optimizer takes it; its first step then stops with an error naming the
// optimizer, the parameter and its dtype, before the parameter is written.
TEST(Optimizer, BFloat16ParameterIsRefusedAtItsStepByName) {
  const Tensor w = leaf(ones({2, 3}).to(kBFloat16));
  w.set_grad(ones({2, 3}).to(kBFloat16));
  SGD sgd(NamedTensors{{"w", w}}, {.lr = 0.1});
  EXPECT_TRUE(has_part(error_of([&] { sgd.step(); }),
                       "SGD: parameter 'w' is bfloat16; SGD updates float32 and float64 parameters only"));
  AdamW adamw(NamedTensors{{"w", w}});
  EXPECT_TRUE(has_part(error_of([&] { adamw.step(); }),
                       "AdamW: parameter 'w' is bfloat16; AdamW updates float32 and float64 parameters only"));
  EXPECT_EQ(w.to(kFloat32).tolist<float>(), std::vector<float>(6, 1.0f));  // not written
}

TEST(Optimizer, DefaultsAreTorchs) {
  const NamedTensors p = two_params();
  Adam adam(p);
  EXPECT_EQ(adam.param_groups()[0].lr, 1e-3);
  EXPECT_EQ(adam.param_groups()[0].weight_decay, 0.0);
  EXPECT_EQ(adam.options().betas, (std::pair<double, double>{0.9, 0.999}));
  EXPECT_EQ(adam.options().eps, 1e-8);
  AdamW adamw(p);
  EXPECT_EQ(adamw.param_groups()[0].weight_decay, 0.01);
  AdamW custom(p, {.weight_decay = 0.1});
  EXPECT_EQ(custom.param_groups()[0].weight_decay, 0.1);
}

TEST(Optimizer, ZeroGradZeroesInPlaceByDefaultAsTorch1_13AndDropsWithSetToNone) {
  const NamedTensors p = two_params();
  SGD opt(p, {.lr = 0.1});
  const Tensor grad = ones({2, 3});
  p[0].second.set_grad(grad);
  opt.zero_grad();
  ASSERT_TRUE(p[0].second.grad().defined());
  EXPECT_TRUE(p[0].second.grad().is_same(grad));  // the same tensor, now zero
  EXPECT_EQ(grad.sum().item(), 0.0);
  EXPECT_FALSE(p[1].second.grad().defined());  // none before, none after
  opt.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(p[0].second.grad().defined());
}

TEST(Optimizer, WeightDecayGroupsSplitMatricesAndEmbeddingsFromBiasesAndLayerNorm) {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Embedding>(5, 4), std::make_shared<nn::LayerNorm>(4), std::make_shared<nn::Linear>(4, 3)});
  const std::vector<ParamGroup> groups = weight_decay_groups(model->named_parameters(), 0.1);
  ASSERT_EQ(groups.size(), 2u);
  auto names = [](const ParamGroup& g) {
    std::vector<std::string> out;
    for (const auto& [n, t] : g.params) out.push_back(n);
    return out;
  };
  EXPECT_EQ(names(groups[0]), (std::vector<std::string>{"0.weight", "2.weight"}));
  EXPECT_EQ(names(groups[1]), (std::vector<std::string>{"1.weight", "1.bias", "2.bias"}));
  EXPECT_EQ(groups[0].weight_decay, 0.1);
  EXPECT_EQ(groups[1].weight_decay, 0.0);
  AdamW opt(groups, {.lr = 1e-3});
  EXPECT_EQ(opt.param_groups()[0].weight_decay, 0.1);
  EXPECT_EQ(opt.param_groups()[1].weight_decay, 0.0);
}

// Three steps, then the state saved and loaded into a second optimizer over copies of the
// parameters: both go on identically.
TEST(Optimizer, StateSavedAndLoadedContinuesBitForBit) {
  const NamedTensors a = two_params();
  AdamW first(a, {.lr = 0.01, .amsgrad = true});
  manual_seed(5);
  auto step_with_random_grads = [](Optimizer& opt, const NamedTensors& params) {
    for (const auto& [n, p] : params) p.set_grad(randn(p.sizes()));
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step_with_random_grads(first, a);
  const NamedTensors saved = first.state_dict();
  std::vector<std::string> names;
  for (const auto& [n, t] : saved) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"w.step", "w.exp_avg", "w.exp_avg_sq", "w.max_exp_avg_sq", "b.step",
                                             "b.exp_avg", "b.exp_avg_sq", "b.max_exp_avg_sq"}));
  EXPECT_EQ(saved[0].second.dtype(), kFloat32);
  EXPECT_EQ(saved[0].second.item(), 3.0);

  const NamedTensors b = {{"w", leaf(a[0].second.detach().clone())}, {"b", leaf(a[1].second.detach().clone())}};
  AdamW second(b, {.lr = 0.01, .amsgrad = true});
  second.load_state(saved);
  const std::vector<uint8_t> rng = default_generator().get_state();
  for (int i = 0; i < 4; ++i) step_with_random_grads(first, a);
  default_generator().set_state(rng);
  for (int i = 0; i < 4; ++i) step_with_random_grads(second, b);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(test::all_close(a[i].second, b[i].second, 0, 0)) << a[i].first;
}

TEST(Optimizer, LoadStateReportsEveryProblemAndChangesNothing) {
  const NamedTensors p = two_params();
  Adam opt(p);
  for (const auto& [n, t] : p) t.set_grad(ones_like(t));
  opt.step();
  const NamedTensors before = opt.state_dict();
  const Tensor exp_avg_before = before[1].second.clone();
  const NamedTensors bad = {{"w.step", scalar_tensor(7.0)},
                            {"w.exp_avg", zeros({3, 2})},
                            {"w.exp_avg_sq", zeros({2, 3}, kFloat64)},
                            {"b.exp_avg", zeros({3})},
                            {"c.exp_avg", zeros({3})},
                            {"w.momentum_buffer", zeros({2, 3})}};
  expect_error([&] { opt.load_state(bad); },
               {"Adam: load_state: 6 problems: ", "'w.exp_avg' is float32 (3,2), expected float32 (2,3)",
                "'w.exp_avg_sq' is float64 (2,3), expected float32 (2,3)", "unexpected key 'c.exp_avg'",
                "unexpected key 'w.momentum_buffer'", "missing key 'b.step'", "missing key 'b.exp_avg_sq'"});
  const NamedTensors after = opt.state_dict();
  EXPECT_TRUE(after[0].second.is_same(before[0].second));
  EXPECT_EQ(after[0].second.item(), 1.0);
  EXPECT_TRUE(test::all_close(after[1].second, exp_avg_before, 0, 0));
}

TEST(Optimizer, StepIsNotRecordedButCountsAsAnInPlaceWrite) {
  Tensor w = leaf(ones({3}));
  SGD opt(std::vector<Tensor>{w}, {.lr = 0.5});
  const Tensor y = (w * w).sum();  // saves w for backward
  w.set_grad(ones({3}));
  const size_t entries = tape_size();
  opt.step();
  EXPECT_EQ(tape_size(), entries);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.tolist<float>(), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_TRUE(has_part(error_of([&] { y.backward(); }),
                       "one of the variables needed for gradient computation has been modified by an"));
}

TEST(Optimizer, ParametersWithoutAGradientAreSkippedAndGetNoState) {
  const NamedTensors p = two_params();
  SGD opt(p, {.lr = 0.1, .momentum = 0.9});
  p[1].second.set_grad(ones({3}));
  opt.step();
  EXPECT_EQ(p[0].second.sum().item(), 6.0);  // w untouched
  const NamedTensors state = opt.state_dict();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first, "b.momentum_buffer");
}

// docs/training-api.md's training loop, as written there: AdamW with the weight-decay split, a
// warmup-cosine schedule and gradient clipping fit y = x (1, -2, 0.5)^T + 0.3.
TEST(Optimizer, ReadmeTrainingLoopFitsALinearModel) {
  manual_seed(0);
  const Tensor x = randn({64, 3});
  const Tensor y = x.matmul(tensor({{1.0}, {-2.0}, {0.5}})) + 0.3;
  auto model = std::make_shared<tg::nn::Linear>(3, 1);
  tg::optim::AdamW opt(tg::optim::weight_decay_groups(model->named_parameters(), 0.1), {.lr = 0.05});
  tg::optim::LambdaLR sched(opt, tg::optim::warmup_cosine(/*warmup*/ 10, /*total*/ 200, /*min factor*/ 0.1));
  double first_loss = 0;
  for (int step = 0; step < 200; ++step) {
    tg::Tensor loss = (model->forward(x) - y).pow(2).mean();
    if (step == 0) first_loss = loss.item();
    opt.zero_grad();
    loss.backward();
    tg::optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    sched.step();
  }
  const double last_loss = (model->forward(x) - y).pow(2).mean().item();
  EXPECT_GT(first_loss, 1.0);
  EXPECT_LT(last_loss, 0.01);
  EXPECT_NEAR(sched.get_last_lr()[0], 0.05 * 0.1, 1e-12);  // the schedule ended at min factor
}

}  // namespace
}  // namespace tg::optim
