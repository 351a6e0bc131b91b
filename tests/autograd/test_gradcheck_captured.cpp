// tg::gradcheck with captured tensors (read by fn, not passed to it) and with random ops in fn.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;

TEST(Gradcheck, CapturedTensorsAreCheckedWhereTheyLiveAndLeftAsTheyWere) {
  Tensor w = test::leaf(test::normal_tensor({3, 2}, 1));
  Tensor x = test::leaf(test::normal_tensor({4, 3}, 2));
  const std::vector<double> before = w.tolist<double>();
  const GradcheckResult r =
      gradcheck([&](const std::vector<Tensor>& in) { return tanh(in[0].matmul(w)); }, {x}, {{"w", w}});
  EXPECT_TRUE(r.passed) << r;
  ASSERT_EQ(r.runs[0].inputs.size(), 2u);
  EXPECT_EQ(r.runs[0].inputs[0].name, "input 0");
  EXPECT_EQ(r.runs[0].inputs[1].name, "w");
  EXPECT_EQ(r.runs[0].inputs[1].input, 1u);  // after the inputs
  EXPECT_EQ(w.tolist<double>(), before);     // perturbed and restored bit for bit
  EXPECT_FALSE(w.grad().defined());
}

TEST(Gradcheck, ACapturedTensorWithAWrongGradientIsNamed) {
  Tensor w = test::leaf(test::normal_tensor({3}, 3));
  Tensor x = test::normal_tensor({3}, 4);
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return in[0] * w.detach() + w; }, {x},
                                      {{"scale", w}});
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(test::has_part(r.report(), "scale: shape (3)")) << r;
  EXPECT_TRUE(test::has_part(r.report(), "scale[0] (0) -> output[0] (0)")) << r;
}

TEST(Gradcheck, CapturedTensorsMustBeFloat64LeavesThatRequireGrad) {
  auto fn = [](const std::vector<Tensor>& in) { return in[0]; };
  Tensor x = test::leaf(ones({2}, kFloat64));
  EXPECT_EQ(error_of([&] { gradcheck(fn, {x}, {{"w", test::leaf(ones({2}))}}); }),
            "gradcheck: captured tensor 'w' must be a float64 leaf that requires grad, got a float32 leaf");
  EXPECT_EQ(error_of([&] { gradcheck(fn, {x}, {{"w", ones({2}, kFloat64)}}); }),
            "gradcheck: captured tensor 'w' must be a float64 leaf that requires grad, got a float64 leaf that "
            "does not require grad");
  EXPECT_EQ(error_of([&] { gradcheck(fn, {x}, {{"w", x * 2.0}}); }),
            "gradcheck: captured tensor 'w' must be a float64 leaf that requires grad, got a float64 non-leaf");
}

TEST(Gradcheck, RandomOpsInFnDrawTheSameNumbersInEveryEvaluation) {
  manual_seed(11);
  const std::vector<uint8_t> state = default_generator().get_state();
  Tensor x = test::leaf(test::normal_tensor({4, 5}, 5));
  const GradcheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return dropout(in[0], 0.4, /*training=*/true) * randn({4, 5}, nullptr, kFloat64); },
      {x});
  EXPECT_TRUE(r.passed) << r;
  EXPECT_EQ(default_generator().get_state(), state);  // as if gradcheck had not run
}

}  // namespace
}  // namespace tg
