// One error type: whatever goes wrong, tapegrad throws a tg::Error, so one catch clause
// catches a bad shape, a corrupt generator state in a checkpoint, bad JSON or a bad print call.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;
using test::has_part;

// error_of (test_util.h) catches only tg::Error: any other exception fails the test.


TEST(Errors, ACorruptGeneratorStateIsATgError) {
  Generator gen(3);
  std::vector<uint8_t> state = gen.get_state();
  state.resize(state.size() - 1);  // a truncated checkpoint
  try {
    gen.set_state(state);
    ADD_FAILURE() << "a truncated state was accepted";
  } catch (const Error& e) {  // the one catch clause a training loop needs
    EXPECT_TRUE(has_part(e.what(), "Generator::set_state: expected 5056 bytes"));
  }
  EXPECT_TRUE(has_part(error_of([&] { gen.set_state(std::vector<uint8_t>(12, 0)); }), "got 12"));
}

TEST(Errors, BadJsonIsATgErrorWithTheByteOffset) {
  EXPECT_TRUE(has_part(error_of([] { json::parse("{\"a\": [1, 2,, 3]}", "bad.json"); }), "bad.json: byte"));
  EXPECT_TRUE(has_part(error_of([] { json::parse_file("/nonexistent/x.json"); }), "x.json: no such file"));
}

TEST(Errors, RandomOpArgumentsAndShapesAreTgErrors) {
  EXPECT_TRUE(has_part(error_of([] { rand({2}, nullptr, kInt64); }), "rand:"));
  EXPECT_TRUE(has_part(error_of([] { ones({2}).uniform_(3.0, 1.0); }), "uniform_:"));
  EXPECT_TRUE(has_part(error_of([] { ones({2, 3}) + ones({4, 3}); }), "add:"));
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// Values from torch 1.13: x.max().backward() with x = [1, nan, 3, nan] gives [0, .5, 0, .5].
TEST(Reductions, MaxAndMinWhoseResultIsNaNSendTheGradientToTheNaNs) {
  for (bool want_max : {true, false}) {
    Tensor x = tensor({1.0, std::nan(""), 3.0, std::nan("")}).requires_grad_();
    Tensor m = want_max ? x.max() : x.min();
    EXPECT_TRUE(std::isnan(m.item()));
    m.backward();
    EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{0, 0.5, 0, 0.5})) << x.grad();
  }
  Tensor y = tensor({1.0, 5.0, 5.0}).requires_grad_();
  y.max().backward();
  EXPECT_EQ(y.grad().tolist<double>(), (std::vector<double>{0, 0.5, 0.5}));
}

// torch: x = [[1, nan], [3, 4]]; v, i = x.max(1) -> v = [nan, 4], i = [1, 1]; grad [[0, 1], [0, 1]].
TEST(Reductions, MaxAlongADimPicksTheNaNAndGivesItTheGradient) {
  Tensor x = tensor({{1.0, std::nan("")}, {3.0, 4.0}}).requires_grad_();
  ValuesIndices r = max(x, 1);
  EXPECT_EQ(r.indices.tolist<int64_t>(), (std::vector<int64_t>{1, 1}));
  r.values.sum().backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{0, 1, 0, 1}));
}

TEST(Reductions, MaxMinArgmaxOverADimOfATensorWithAnotherEmptyDimAreEmpty) {
  ValuesIndices a = max(zeros({0, 3}), 1);
  EXPECT_EQ(a.values.sizes(), (Shape{0}));
  EXPECT_EQ(a.indices.sizes(), (Shape{0}));
  EXPECT_EQ(max(zeros({3, 0}), 0).values.sizes(), (Shape{0}));
  EXPECT_EQ(argmax(zeros({0, 3}), 1).sizes(), (Shape{0}));
  EXPECT_EQ(min(zeros({2, 0, 3}), 2, true).values.sizes(), (Shape{2, 0, 1}));
}

TEST(Reductions, ReducingOverAnEmptyDimSaysWhichDim) {
  EXPECT_TRUE(has_part(error_of([] { max(zeros({3, 0}), 1); }), "max(): Expected reduction dim 1 to have non-zero size"));
  EXPECT_TRUE(has_part(error_of([] { argmax(zeros({3, 0}), -1); }),
                       "argmax(): Expected reduction dim 1 to have non-zero size"));
  EXPECT_TRUE(has_part(error_of([] { zeros({0}).max(); }),
                       "max(): Expected reduction dim to be specified for input.numel() == 0"));
  EXPECT_TRUE(has_part(error_of([] { argmax(zeros({2, 0})); }),
                       "argmax(): Expected reduction dim to be specified for input.numel() == 0"));
}

}  // namespace
}  // namespace tg
