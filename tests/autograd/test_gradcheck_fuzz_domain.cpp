// gradcheck's fuzzer never reports a false failure: a shape variation where the op is undefined
// (unbiased var over one element gives 0/0) is skipped with a reason, not counted as a failure.
#include <gtest/gtest.h>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "test_util.h"

namespace tg {
namespace {

TEST(GradcheckFuzz, VarOverADimHasNoFalseFailureOverManySeeds) {
  Tensor x = test::leaf(test::normal_tensor({3, 4, 2}, 5));
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      GradcheckOptions options;
      options.fuzz = 60;
      options.fuzz_seed = 1000 + static_cast<uint32_t>(dim + 1) * 100 + (keepdim ? 50 : 0);
      const GradcheckResult r =
          gradcheck([dim, keepdim](const std::vector<Tensor>& in) { return var(in[0], dim, true, keepdim); }, {x}, options);
      EXPECT_TRUE(r.passed) << "var(dim " << dim << ", keepdim " << keepdim << ")\n" << r;
      // the fuzzer did draw shapes with the reduced dim shrunk to 1, and said why it kept the given ones
      int avoided = 0;
      for (const GradcheckRun& run : r.runs) avoided += run.what.find("was not used: fn's output is not finite") != std::string::npos;
      EXPECT_GT(avoided, 0) << "60 fuzz runs never shrank dim " << dim;
    }
  }
}

TEST(GradcheckFuzz, AVariationThatIsUndefinedIsReplacedNotFailed) {
  // single fuzz runs, one seed each: those whose shape draw shrinks the reduced dim to 1 (var over
  // one element is 0/0) keep the given shape, say why, and pass
  Tensor x = test::leaf(test::normal_tensor({3, 4, 2}, 5));
  int undefined_draws = 0;
  for (uint32_t seed = 1100; seed < 1140; ++seed) {
    GradcheckOptions options;
    options.fuzz = 1;
    options.fuzz_seed = seed;
    const GradcheckResult r = gradcheck([](const std::vector<Tensor>& in) { return var(in[0], 0); }, {x}, options);
    ASSERT_EQ(r.runs.size(), 2u);
    EXPECT_TRUE(r.passed) << "seed " << seed << "\n" << r;
    EXPECT_FALSE(r.runs[1].skipped) << "seed " << seed;
    if (!test::has_part(r.runs[1].what, "the shape variation input 0 (1,")) continue;
    ++undefined_draws;
    EXPECT_TRUE(test::has_part(r.runs[1].what, "the op is undefined at these shapes")) << r.runs[1].what;
    EXPECT_TRUE(test::has_part(r.runs[1].what, "input 0 (3,4,2)")) << r.runs[1].what;  // the given shape, kept
  }
  EXPECT_GT(undefined_draws, 3) << "40 seeds never shrank dim 0";
}

TEST(GradcheckFuzz, AgreeingNaNJacobianEntriesPass) {
  // unbiased var over one element: forward and both Jacobians are NaN, which gradcheck treats as agreeing
  Tensor x = test::leaf(test::normal_tensor({1, 3}, 6));
  const GradcheckResult r = gradcheck([](const std::vector<Tensor>& in) { return var(in[0], 0); }, {x});
  EXPECT_TRUE(r.passed) << r;
}

}  // namespace
}  // namespace tg
