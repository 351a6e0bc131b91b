// tg::nn::gradcheck (a whole module: parameters and inputs, in float64) and Module::to.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "nn/gradcheck.h"
#include "nn/nn.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::error_of;
using test::has_part;

std::vector<std::string> checked_names(const GradcheckResult& r) {
  std::vector<std::string> names;
  for (const InputCheck& c : r.runs[0].inputs) names.push_back(c.name);
  return names;
}

TEST(NnGradcheck, ChecksEveryParameterAndEachInputThatRequiresGrad) {
  manual_seed(1);
  Linear fc(3, 2);
  Tensor x = test::normal_tensor({4, 3}, 1, kFloat32).requires_grad_();
  const GradcheckResult r = gradcheck(fc, {x});
  EXPECT_TRUE(r.passed) << r;
  EXPECT_EQ(checked_names(r), (std::vector<std::string>{"input 0", "weight", "bias"}));
  EXPECT_EQ(r.runs[0].inputs[1].rows, 6);  // weight (2,3) against the (4,2) output
  EXPECT_EQ(r.runs[0].inputs[1].cols, 8);
  EXPECT_LT(r.max_abs_error, 1e-8);

  Tensor fixed = test::normal_tensor({4, 3}, 2, kFloat32);  // an input without requires_grad is not checked
  EXPECT_EQ(checked_names(gradcheck(fc, {fixed})), (std::vector<std::string>{"weight", "bias"}));
}

// A module whose backward is wrong: the weight's gradient is cut by detach.
struct DetachedWeight : Module {
  std::shared_ptr<Linear> fc;
  DetachedWeight() : Module("DetachedWeight") { fc = register_module("fc", std::make_shared<Linear>(2, 2)); }
  Tensor forward(const Tensor& x) override { return linear(x, fc->weight.detach(), fc->bias); }
};

TEST(NnGradcheck, NamesTheParameterWhoseGradientIsWrong) {
  manual_seed(2);
  DetachedWeight m;
  const GradcheckResult r = gradcheck(m, {test::normal_tensor({3, 2}, 3)});
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(r.runs[0].inputs.size(), 2u);
  EXPECT_FALSE(r.runs[0].inputs[0].passed);  // fc.weight: analytical 0, numerical x
  EXPECT_TRUE(r.runs[0].inputs[1].passed);   // fc.bias
  EXPECT_TRUE(has_part(r.report(), "fc.weight: shape (2,2)")) << r;
  EXPECT_TRUE(has_part(error_of([&] { assert_gradcheck(m, {test::normal_tensor({3, 2}, 3)}); }), "fc.weight"));
}

TEST(NnGradcheck, PutsBackTheModulesDtypeValuesGradientsAndTheGenerator) {
  manual_seed(3);
  Sequential s{std::make_shared<Linear>(3, 4), std::make_shared<GELU>(), std::make_shared<Linear>(4, 2)};
  Tensor x = test::normal_tensor({2, 3}, 4, kFloat32);
  s.forward(x).sum().backward();  // gradients from before the check
  std::vector<std::vector<float>> values, grads;
  for (const Tensor& p : s.parameters()) {
    values.push_back(p.tolist<float>());
    grads.push_back(p.grad().tolist<float>());
  }
  const std::vector<uint8_t> generator = default_generator().get_state();
  EXPECT_TRUE(gradcheck(s, {x.requires_grad_()}).passed);
  const std::vector<Tensor> after = s.parameters();
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].dtype(), kFloat32);
    EXPECT_EQ(after[i].tolist<float>(), values[i]);  // bit for bit
    EXPECT_EQ(after[i].grad().tolist<float>(), grads[i]);
  }
  EXPECT_EQ(s.forward(x).dtype(), kFloat32);
  EXPECT_EQ(default_generator().get_state(), generator);
}

TEST(NnGradcheck, DropoutInTrainingSeesTheSameMaskInEveryEvaluation) {
  Dropout drop(0.5);
  Tensor x = test::normal_tensor({3, 4}, 5).requires_grad_();
  manual_seed(6);
  const std::vector<uint8_t> generator = default_generator().get_state();
  GradcheckOptions options;
  options.full_jacobian_up_to = 144;  // keep both Jacobians
  const GradcheckResult r = gradcheck(drop, {x}, options);
  EXPECT_TRUE(r.passed) << r;
  EXPECT_EQ(default_generator().get_state(), generator);
  // the Jacobian is the mask the next forward draws: diagonal 0 or 1/(1-p) = 2
  const std::vector<double> mask = drop.forward(ones({3, 4}, kFloat64)).tolist<double>();
  const InputCheck& c = r.runs[0].inputs[0];
  ASSERT_EQ(c.analytical.size(), 144u);
  for (size_t j = 0; j < 12; ++j) EXPECT_EQ(c.analytical[j * 12 + j], mask[j]) << "element " << j;
}

struct MixedDtypes : Module {
  Tensor a, b;
  MixedDtypes() : Module("MixedDtypes") {
    a = register_parameter("a", ones({2}));
    b = register_parameter("b", ones({2}, kFloat64));
  }
  Tensor forward(const Tensor& x) override { return x * a.to_double() * b; }
};

TEST(NnGradcheck, BadCallsAreExplained) {
  Linear fc(2, 2);
  EXPECT_EQ(error_of([&] { gradcheck(fc, {ones({1, 2}), ones({1, 2})}); }),
            "gradcheck: Linear is called as forward(inputs[0]), so it needs exactly one input, got 2; pass a "
            "forward function for more");
  MixedDtypes mixed;
  EXPECT_EQ(error_of([&] { gradcheck(mixed, {ones({2})}); }),
            "gradcheck: MixedDtypes mixes dtypes ('a' is float32, 'b' is float64); convert it with to() first");
  ReLU relu;
  EXPECT_TRUE(has_part(error_of([&] { gradcheck(relu, {ones({2})}); }), "gradcheck: no input requires grad"));
}

TEST(Module, ToConvertsEveryParameterInPlaceAndBack) {
  manual_seed(7);
  MultiHeadAttention mha(3, 4, 6, 0.0, 2, true);
  const Tensor weight = mha.W_query->weight;  // a handle taken before: it sees the conversion
  const std::vector<float> before = weight.tolist<float>();
  Tensor x = test::normal_tensor({1, 2, 3}, 8, kFloat32);
  Tensor y32 = mha.forward(x);
  mha.to(kFloat64);
  EXPECT_EQ(weight.dtype(), kFloat64);
  EXPECT_TRUE(weight.requires_grad() && weight.is_leaf());
  for (const auto& [name, t] : mha.state_dict()) EXPECT_EQ(t.dtype(), kFloat64) << name;  // the mask buffer too
  Tensor y64 = mha.forward(x.to_double());
  EXPECT_EQ(y64.dtype(), kFloat64);
  EXPECT_TRUE(test::all_close(y64, y32, 1e-6, 1e-5));
  // the float32 graph saved the old weights: it refuses to backpropagate now
  EXPECT_TRUE(has_part(error_of([&] { y32.sum().backward(); }), "modified by an inplace operation"));
  mha.to(kFloat32);
  EXPECT_EQ(weight.tolist<float>(), before);
  EXPECT_EQ(error_of([&] { mha.to(kInt64); }), "MultiHeadAttention.to: only floating point dtypes (float32, float64), got int64");
  EXPECT_EQ(error_of([&] { mha.to(kBFloat16); }),
            "MultiHeadAttention.to: only floating point dtypes (float32, float64), got bfloat16 (bfloat16 is for "
            "storing tensors; keep a module's parameters in float32)");
}

}  // namespace
}  // namespace tg::nn
