// tg::optim against torch 1.13 (tests/reference/optim_torch.json, made by
// make_optim_reference.py): from the same parameters and the same gradients, every optimizer
// case gives PyTorch's parameters after each of 10 steps and PyTorch's final state, bit for bit;
// clip_grad_norm_ gives PyTorch's total norm and clipped gradients; LambdaLR gives PyTorch's
// learning rates.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "autograd/fast_kernels.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "optim/optim.h"
#include "test_util.h"

namespace tg::optim {
namespace {

using test::decode_reference;
using test::error_of;
using test::has_part;

const json::Value& reference() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/optim_torch.json");
  return doc;
}

double decode_double(const json::Value& v) { return std::bit_cast<double>(std::stoull(v.as_string(), nullptr, 16)); }

// got == want element by element, bit for bit (NaN equal to NaN); on failure names the element.
::testing::AssertionResult bit_equal(const Tensor& got, const Tensor& want) {
  if (got.sizes() != want.sizes() || got.dtype() != want.dtype()) {
    return ::testing::AssertionFailure() << "shape/dtype " << got.sizes() << " " << dtype_name(got.dtype()) << " vs "
                                         << want.sizes() << " " << dtype_name(want.dtype());
  }
  const auto g = got.tolist<double>(), w = want.tolist<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::bit_cast<uint64_t>(g[i]) != std::bit_cast<uint64_t>(w[i]) && !(std::isnan(g[i]) && std::isnan(w[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i]
                                           << " (diff " << g[i] - w[i] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

ScalarType dtype_of_case(const json::Value& c) { return c["dtype"].as_string() == "float64" ? kFloat64 : kFloat32; }

// Fresh leaves with the reference's starting values, in the reference's order (w, b, s, m, frozen).
nn::NamedTensors initial_params(ScalarType dtype) {
  nn::NamedTensors params;
  for (const json::Member& m : reference()["initial"].as_object())
    params.push_back({m.key, test::leaf(decode_reference(m.value).to(dtype))});
  return params;
}

Tensor find(const nn::NamedTensors& named, const std::string& name) {
  for (const auto& [n, t] : named)
    if (n == name) return t;
  throw Error("no parameter " + name);
}

double number_or(const json::Value& options, const char* key, double fallback) {
  const json::Value* v = options.find(key);
  return v ? v->as_double() : fallback;
}
bool flag(const json::Value& options, const char* key) {
  const json::Value* v = options.find(key);
  return v && v->as_bool();
}

// The C++ twin of the case's torch.optim optimizer.
std::unique_ptr<Optimizer> make_optimizer(const json::Value& c, const nn::NamedTensors& params) {
  std::vector<ParamGroup> groups;
  if (c["groups"].is_null()) {
    groups = single_group(params);
  } else {
    for (size_t g = 0; g < c["groups"].size(); ++g) {
      const json::Value& spec = c["groups"][g];
      ParamGroup group;
      for (size_t i = 0; i < spec["params"].size(); ++i) {
        const std::string& name = spec["params"][i].as_string();
        group.params.push_back({name, find(params, name)});
      }
      if (spec.contains("lr")) group.lr = spec["lr"].as_double();
      if (spec.contains("weight_decay")) group.weight_decay = spec["weight_decay"].as_double();
      groups.push_back(group);
    }
  }
  const json::Value& o = c["options"];
  const std::string kind = c["optimizer"].as_string();
  if (kind == "SGD") {
    return std::make_unique<SGD>(groups, SGDOptions{.lr = o["lr"].as_double(),
                                                    .momentum = number_or(o, "momentum", 0.0),
                                                    .dampening = number_or(o, "dampening", 0.0),
                                                    .weight_decay = number_or(o, "weight_decay", 0.0),
                                                    .nesterov = flag(o, "nesterov"),
                                                    .maximize = flag(o, "maximize")});
  }
  AdamOptions options{.lr = number_or(o, "lr", 1e-3), .eps = number_or(o, "eps", 1e-8),
                      .amsgrad = flag(o, "amsgrad"), .maximize = flag(o, "maximize")};
  if (o.contains("betas")) options.betas = {o["betas"][0].as_double(), o["betas"][1].as_double()};
  if (o.contains("weight_decay")) options.weight_decay = o["weight_decay"].as_double();
  if (kind == "Adam") return std::make_unique<Adam>(groups, options);
  return std::make_unique<AdamW>(groups, options);
}

LRFactor make_factor(const json::Value& s) {
  const std::string kind = s["kind"].as_string();
  if (kind == "constant") return constant();
  if (kind == "warmup_cosine") {
    return warmup_cosine(s["warmup_steps"].as_int64(), s["total_steps"].as_int64(), s["min_factor"].as_double());
  }
  const double gamma = s["gamma"].as_double();  // the tests' own lambda, as LambdaLR's lr_lambda
  return [gamma](int64_t step) { return std::pow(gamma, static_cast<double>(step)); };
}

// Runs one reference case: 10 steps with the reference's gradients, each step's parameters and
// the final state compared bit for bit; with the fast kernels on or off (the reference loops).
void expect_case_matches_torch_with(const std::string& id, bool fast) {
  FastKernelsGuard guard(fast);
  SCOPED_TRACE(fast ? "fast kernels" : "reference loops");
  const json::Value* found = nullptr;
  for (const json::Value& c : reference()["optimizers"].as_array())
    if (c["id"].as_string() == id) found = &c;
  ASSERT_NE(found, nullptr) << "no reference case " << id;
  const json::Value& c = *found;
  SCOPED_TRACE(id);
  const ScalarType dtype = dtype_of_case(c);
  const nn::NamedTensors params = initial_params(dtype);
  std::unique_ptr<Optimizer> opt = make_optimizer(c, params);
  std::unique_ptr<LambdaLR> sched;
  if (!c["schedule"].is_null()) sched = std::make_unique<LambdaLR>(*opt, make_factor(c["schedule"]));
  const json::Value& grads = reference()["grads"];
  for (size_t step = 0; step < c["after"].size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    for (const auto& [name, p] : params) {
      const json::Value& g = grads[step][name];
      p.set_grad(g.is_null() ? Tensor() : decode_reference(g).to(dtype));
    }
    opt->step();
    if (sched) {
      sched->step();
      const std::vector<double> lrs = sched->get_last_lr();
      ASSERT_EQ(lrs.size(), c["lrs"][step].size());
      for (size_t g = 0; g < lrs.size(); ++g) EXPECT_EQ(lrs[g], decode_double(c["lrs"][step][g])) << "group " << g;
    }
    for (const auto& [name, p] : params) {
      EXPECT_TRUE(bit_equal(p.detach(), decode_reference(c["after"][step][name], dtype))) << name;
    }
  }
  const nn::NamedTensors state = opt->state_dict();
  ASSERT_EQ(state.size(), c["state"].size());
  for (size_t i = 0; i < state.size(); ++i) {
    const std::string& name = c["state"][i][0].as_string();
    EXPECT_EQ(state[i].first, name);
    const ScalarType state_dtype = name.ends_with(".step") ? kFloat32 : dtype;
    EXPECT_TRUE(bit_equal(state[i].second, decode_reference(c["state"][i][1], state_dtype))) << name;
  }
}

// Both ways: the fast kernels and the reference loops each give PyTorch's bits.
void expect_case_matches_torch(const std::string& id) {
  for (bool fast : {true, false}) expect_case_matches_torch_with(id, fast);
}

TEST(SGD, PlainMomentumDampeningNesterovWeightDecayMaximizeMatchTorchBitForBit) {
  for (const char* id : {"sgd_plain", "sgd_momentum", "sgd_momentum_dampening", "sgd_nesterov", "sgd_weight_decay",
                         "sgd_maximize"})
    expect_case_matches_torch(id);
}

TEST(Adam, DefaultWeightDecayAmsgradMaximizeMatchTorchBitForBit) {
  for (const char* id : {"adam_default", "adam_weight_decay", "adam_amsgrad", "adam_maximize"})
    expect_case_matches_torch(id);
}

TEST(AdamW, DefaultCustomAndAmsgradMatchTorchBitForBit) {
  for (const char* id : {"adamw_default", "adamw_custom", "adamw_amsgrad"}) expect_case_matches_torch(id);
}

TEST(Optimizer, TwoParamGroupsWithTheirOwnLrAndWeightDecayMatchTorch) {
  expect_case_matches_torch("sgd_two_groups");
  expect_case_matches_torch("adamw_two_groups");
}

TEST(Optimizer, Float64MatchesTorchBitForBit) {
  for (const char* id : {"adam_float64", "sgd_float64", "adamw_float64"}) expect_case_matches_torch(id);
}

TEST(LambdaLR, WarmupCosineDrivingAdamWMatchesTorch) { expect_case_matches_torch("adamw_warmup_cosine"); }

// clip_grad_norm_ on the reference's gradients (and a parameter without one): the total norm
// and the clipped gradients, bit for bit.
void expect_clip_matches_torch(const json::Value& c) {
  SCOPED_TRACE(c["id"].as_string());
  nn::NamedTensors params;
  for (const json::Member& m : c["grads"].as_object()) {
    Tensor grad = decode_reference(m.value);
    params.push_back({m.key, test::leaf(zeros(grad.sizes()))});
    params.back().second.set_grad(grad);
  }
  params.push_back({"frozen", test::leaf(zeros({2}))});
  std::vector<Tensor> list;
  for (const auto& [name, p] : params) list.push_back(p);
  const Tensor total = clip_grad_norm_(list, c["max_norm"].as_double(), decode_double(c["norm_type"]));
  EXPECT_TRUE(bit_equal(total, scalar_tensor(decode_double(c["total_norm"])))) << "total norm";
  for (const json::Member& m : c["clipped"].as_object()) {
    EXPECT_TRUE(bit_equal(find(params, m.key).grad(), decode_reference(m.value))) << m.key;
  }
}

TEST(ClipGradNorm, TotalNormAndClippedGradientsMatchTorchForNormTypes2_1_3_InfAndMinusInf) {
  for (bool fast : {true, false}) {
    FastKernelsGuard guard(fast);
    SCOPED_TRACE(fast ? "fast kernels" : "reference loops");
    for (const json::Value& c : reference()["clip"].as_array()) expect_clip_matches_torch(c);
  }
}

// A "norms" case's parameters: one per length, each with the gradient torch.randn(n) * 2 drawn
// after manual_seed(seed).
std::vector<Tensor> norm_case_params(const json::Value& c) {
  manual_seed(c["seed"].as_int64());
  std::vector<Tensor> params;
  for (size_t i = 0; i < c["lengths"].size(); ++i) {
    params.push_back(test::leaf(zeros({c["lengths"][i].as_int64()})));
    params.back().set_grad(randn({c["lengths"][i].as_int64()}) * 2.0);
  }
  return params;
}

TEST(ClipGradNorm, TotalNormOfSixtyGradientsOfManyLengthsMatchesTorchBitForBit) {
  for (const json::Value& c : reference()["norms"].as_array()) {
    SCOPED_TRACE(c["id"].as_string());
    const std::vector<Tensor> params = norm_case_params(c);
    for (bool fast : {true, false}) {
      FastKernelsGuard guard(fast);
      const Tensor total = grad_norm(params, decode_double(c["norm_type"]));
      EXPECT_TRUE(bit_equal(total, scalar_tensor(decode_double(c["total_norm"]))))
          << (fast ? "fast kernels" : "reference loops");
    }
    const Tensor total = clip_grad_norm_(params, 1.0, decode_double(c["norm_type"]));
    EXPECT_TRUE(bit_equal(total, scalar_tensor(decode_double(c["total_norm"]))));
  }
}

// grad_norm is clip_grad_norm_'s total (same bits, every norm type) and leaves the gradients alone.
TEST(GradNorm, EqualsClipGradNormsTotalBitForBitAndChangesNoGradient) {
  for (const json::Value& c : reference()["norms"].as_array()) {
    SCOPED_TRACE(c["id"].as_string());
    const std::vector<Tensor> params = norm_case_params(c);
    std::vector<Tensor> before;
    for (const Tensor& p : params) before.push_back(p.grad().clone());
    const Tensor norm = grad_norm(params, decode_double(c["norm_type"]));
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(bit_equal(params[i].grad(), before[i])) << "gradient " << i;
    EXPECT_TRUE(bit_equal(norm, scalar_tensor(decode_double(c["total_norm"]))));
  }
  Tensor w = test::leaf(zeros({2}));
  EXPECT_EQ(grad_norm({w}).item(), 0.0);  // no gradient yet
  w.set_grad(tensor({1.0, std::numeric_limits<double>::quiet_NaN()}));
  EXPECT_TRUE(std::isnan(grad_norm({w}).item()));
  EXPECT_EQ(w.grad().at({0}), 1.0);
  Tensor i = test::leaf(zeros({2}, kFloat64));
  i.set_grad(zeros({2}, kFloat64));
  EXPECT_TRUE(has_part(error_of([&] { grad_norm({w, i}); }),
                       "grad_norm: all gradients must have one floating dtype, got float32 and float64"));
}

TEST(ClipGradNorm, NonFiniteTotalIsAnErrorOnlyWhenAskedAndChangesNothing) {
  Tensor w = test::leaf(zeros({2}));
  w.set_grad(tensor({1.0, kInf}));
  const std::string message = error_of([&] { clip_grad_norm_({w}, 1.0, 2.0, true); });
  EXPECT_TRUE(has_part(message, "clip_grad_norm_: the total norm of order 2.0 for gradients from `parameters` is "
                                "non-finite, so it cannot be clipped"));
  EXPECT_EQ(w.grad().at({0}), 1.0);
  const Tensor total = clip_grad_norm_({w}, 1.0);  // as torch: scaled by max_norm / inf = 0
  EXPECT_TRUE(std::isinf(total.item()));
  EXPECT_EQ(w.grad().at({0}), 0.0);
  EXPECT_TRUE(std::isnan(w.grad().at({1})));
}

TEST(ClipGradNorm, NoGradientsGiveZeroAndSmallNormsAreLeftAlone) {
  Tensor w = test::leaf(ones({3}));
  EXPECT_EQ(clip_grad_norm_({w}, 1.0).item(), 0.0);
  w.set_grad(tensor({0.3, -0.4, 0.0}));
  const Tensor total = clip_grad_norm_({w}, 1.0);
  EXPECT_FLOAT_EQ(static_cast<float>(total.item()), 0.5f);
  EXPECT_EQ(w.grad().tolist<float>(), (std::vector<float>{0.3f, -0.4f, 0.0f}));  // coef clamped to 1
}

TEST(LambdaLR, ConstantWarmupCosineAndAUserLambdaMatchTorchsLearningRates) {
  for (const json::Value& c : reference()["schedules"].as_array()) {
    SCOPED_TRACE(c["id"].as_string());
    std::vector<ParamGroup> groups;
    for (size_t g = 0; g < c["base_lrs"].size(); ++g) {
      groups.push_back({{{"", test::leaf(zeros({1}))}}, decode_double(c["base_lrs"][g]), {}});  // named "0", "1", ...
    }
    SGD opt(groups, {.lr = decode_double(c["base_lrs"][0])});
    LambdaLR sched(opt, make_factor(c["schedule"]));
    for (size_t step = 0; step < c["lrs"].size(); ++step) {
      if (step > 0) {
        opt.step();
        sched.step();
      }
      const std::vector<double> lrs = sched.get_last_lr();
      ASSERT_EQ(lrs.size(), c["lrs"][step].size());
      for (size_t g = 0; g < lrs.size(); ++g) {
        EXPECT_EQ(lrs[g], decode_double(c["lrs"][step][g])) << "step " << step << " group " << g;
        EXPECT_EQ(opt.param_groups()[g].lr, lrs[g]);
      }
    }
  }
}

TEST(LambdaLR, WarmupCosineRefusesBadSteps) {
  EXPECT_TRUE(has_part(error_of([] { warmup_cosine(10, 10); }),
                       "warmup_cosine: need 0 <= warmup_steps < total_steps, got warmup_steps 10 and total_steps 10"));
  EXPECT_TRUE(has_part(error_of([] { warmup_cosine(1, 10, 1.5); }), "warmup_cosine: min_factor must be in [0, 1]"));
}

}  // namespace
}  // namespace tg::optim
