// tests/autograd/test_gradcheck.cpp — tg::gradcheck itself: it passes correct ops, fails (and
// says where) on ops with a wrong backward, checks strided inputs as the views they are, and
// its fuzzer finds bugs that only show on broadcast shapes or strided layouts.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "autograd/gradcheck.h"
#include "autograd/internal.h"  // contiguous_strides
#include "autograd/ops.h"
#include "autograd/record.h"
#include "test_util.h"

namespace tg {
namespace {

using tg::test::normal_tensor;
using tg::test::leaf;

// --- deliberately broken ops, recorded on the tape by hand --------------------------------------

// forward x*x + y; backward for x forgets... nothing, except that element `wrong_at` of dx gets
// one extra g: the analytical Jacobian is off by exactly 1 in entry (wrong_at, wrong_at).
Tensor square_plus_with_one_wrong_element(const Tensor& x, const Tensor& y, int64_t wrong_at) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = add(mul(x, x), y);
  }
  std::vector<double> bump(static_cast<size_t>(x.numel()), 0.0);
  bump[static_cast<size_t>(wrong_at)] = 1.0;
  const Tensor bump_tensor = from_vector(bump, x.sizes(), x.dtype());
  record("SquarePlusWrongBackward", {x, y}, out, {x}, [bump_tensor](const BackwardArgs& ctx) {
    Tensor dx = add(mul(ctx.grad_out, mul(ctx.saved[0], 2.0)), mul(ctx.grad_out, bump_tensor));
    return Grads{dx, ctx.grad_out};
  });
  return out;
}

// forward x*x; backward reads x's memory as if it were contiguous: right for contiguous inputs,
// wrong for transposed or sliced ones.
Tensor square_assuming_contiguous(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = mul(x, x);
  }
  record("SquareContiguousOnlyBackward", {x}, out, {x}, [](const BackwardArgs& ctx) {
    const Tensor& saved = ctx.saved[0];
    const double* memory = saved.data_ptr<double>();  // the bug: ignores the strides
    std::vector<double> two_x(static_cast<size_t>(saved.numel()));
    for (size_t i = 0; i < two_x.size(); ++i) two_x[i] = 2 * memory[i];
    return Grads{mul(ctx.grad_out, from_vector(two_x, saved.sizes(), saved.dtype()))};
  });
  return out;
}

// forward a*b with broadcasting; backward for b averages over the broadcast dims instead of
// summing: right when a and b have the same shape, wrong when b was broadcast.
Tensor mul_with_mean_reduced_grad(const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = mul(a, b);
  }
  const Shape b_shape = b.sizes();
  record("MulMeanBackward", {a, b}, out, {a, b}, [b_shape](const BackwardArgs& ctx) {
    Tensor da = mul(ctx.grad_out, ctx.saved[1]);
    Tensor db = mul(ctx.grad_out, ctx.saved[0]);
    const int64_t lead = db.dim() - static_cast<int64_t>(b_shape.size());
    for (int64_t d = 0; d < lead; ++d) db = mean(db, 0);
    for (int64_t d = 0; d < db.dim(); ++d)
      if (b_shape[d] == 1 && db.sizes()[d] != 1) db = mean(db, d, true);  // the bug: mean, not sum
    return Grads{da, db};
  });
  return out;
}

// --- passing -------------------------------------------------------------------------------------------

TEST(Gradcheck, PassesOnCorrectOps) {
  Tensor a = leaf(normal_tensor({3, 4}, 1));
  Tensor b = leaf(normal_tensor({3, 4}, 2));
  GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return tanh(mul(x[0], x[1])); }, {a, b});
  EXPECT_TRUE(r.passed) << r;
  ASSERT_EQ(r.runs.size(), 1u);
  ASSERT_EQ(r.runs[0].inputs.size(), 2u);
  EXPECT_TRUE(r.has_worst);
  EXPECT_LE(r.worst.excess, 1.0);
  EXPECT_NE(r.report().find("gradcheck passed"), std::string::npos) << r;
}

TEST(Gradcheck, OnlyInputsThatRequireGradAreChecked) {
  Tensor a = leaf(normal_tensor({2, 3}, 3));
  Tensor b = normal_tensor({2, 3}, 4);  // a constant
  GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return sum(mul(x[0], x[1]), 1); }, {a, b});
  EXPECT_TRUE(r.passed) << r;
  ASSERT_EQ(r.runs[0].inputs.size(), 1u);
  EXPECT_EQ(r.runs[0].inputs[0].input, 0u);
}

TEST(Gradcheck, LeavesTheCallersTensorsUntouched) {
  Tensor a = leaf(normal_tensor({4}, 5));
  const std::vector<double> before = a.tolist<double>();
  GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return exp(x[0]); }, {a});
  EXPECT_TRUE(r.passed) << r;
  EXPECT_EQ(a.tolist<double>(), before);
  EXPECT_FALSE(a.grad().defined());
}

// --- failing, and saying where ----------------------------------------------------------------------------

TEST(Gradcheck, BrokenBackwardFailsAndReportNamesTheInputAndWorstElement) {
  Tensor x = leaf(normal_tensor({2, 3}, 6));
  Tensor y = leaf(normal_tensor({2, 3}, 7));
  GradcheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return square_plus_with_one_wrong_element(in[0], in[1], 4); }, {x, y});
  ASSERT_FALSE(r.passed) << r;
  ASSERT_EQ(r.runs[0].inputs.size(), 2u);
  const InputCheck& bad = r.runs[0].inputs[0];
  EXPECT_FALSE(bad.passed);
  EXPECT_TRUE(r.runs[0].inputs[1].passed) << r;  // y's gradient is right
  ASSERT_FALSE(bad.worst.empty());
  EXPECT_EQ(bad.worst[0].input_index, 4);
  EXPECT_EQ(bad.worst[0].output_index, 4);
  EXPECT_NEAR(bad.worst[0].analytical - bad.worst[0].numerical, 1.0, 1e-6);
  EXPECT_GT(bad.worst[0].excess, 1.0);
  // only entry (4,4) is wrong
  EXPECT_LE(bad.worst[1].excess, 1.0);

  const std::string report = r.report();
  EXPECT_NE(report.find("gradcheck FAILED"), std::string::npos) << report;
  EXPECT_NE(report.find("input 0: shape (2,3)"), std::string::npos) << report;
  EXPECT_NE(report.find("input[4] (1,1) -> output[4] (1,1)"), std::string::npos) << report;
  EXPECT_NE(report.find("OUT OF TOLERANCE"), std::string::npos) << report;
  // small Jacobians (6 x 6) are printed in full
  EXPECT_NE(report.find("numerical Jacobian (6 x 6"), std::string::npos) << report;
  EXPECT_NE(report.find("analytical Jacobian"), std::string::npos) << report;
}

TEST(Gradcheck, LargeJacobiansShowOnlyTheWorstEntries) {
  Tensor x = leaf(normal_tensor({5, 4}, 8));
  Tensor y = leaf(normal_tensor({5, 4}, 9));
  GradcheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return square_plus_with_one_wrong_element(in[0], in[1], 13); }, {x, y});
  ASSERT_FALSE(r.passed);
  EXPECT_TRUE(r.runs[0].inputs[0].numerical.empty());  // 400 entries > full_jacobian_up_to
  const std::string report = r.report();
  EXPECT_NE(report.find("only the worst are shown"), std::string::npos) << report;
  EXPECT_NE(report.find("input[13] (3,1) -> output[13] (3,1)"), std::string::npos) << report;
}

TEST(Gradcheck, AssertGradcheckThrowsTheReport) {
  Tensor x = leaf(normal_tensor({3}, 10));
  Tensor y = leaf(normal_tensor({3}, 11));
  auto broken = [](const std::vector<Tensor>& in) { return square_plus_with_one_wrong_element(in[0], in[1], 0); };
  try {
    assert_gradcheck(broken, {x, y});
    FAIL() << "assert_gradcheck did not throw on a wrong backward";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input[0] (0) -> output[0] (0)"), std::string::npos) << e.what();
  }
  auto correct = [](const std::vector<Tensor>& in) { return add(mul(in[0], in[0]), in[1]); };
  EXPECT_NO_THROW(assert_gradcheck(correct, {x, y}));
}

TEST(Gradcheck, MissingTapeEntryIsAFailureNotACrash) {
  Tensor x = leaf(normal_tensor({3}, 12));
  auto untracked = [](const std::vector<Tensor>& in) {
    NoGradGuard no_grad;  // forgets to record anything
    return mul(in[0], 3.0);
  };
  GradcheckResult r = gradcheck(untracked, {x});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.report().find("does not require grad"), std::string::npos) << r;
}

// --- strided inputs ---------------------------------------------------------------------------------

TEST(Gradcheck, ChecksTransposedAndSlicedInputsThroughTheirStrides) {
  Tensor transposed = leaf(normal_tensor({4, 3}, 13).t());            // (3,4) strides (1,3)
  Tensor sliced = leaf(normal_tensor({3, 9}, 14).slice(1, 1, 9, 2));  // (3,4) strides (9,2) offset 1
  ASSERT_FALSE(transposed.is_contiguous());
  ASSERT_FALSE(sliced.is_contiguous());
  GradcheckResult r =
      gradcheck([](const std::vector<Tensor>& x) { return mul(sigmoid(x[0]), x[1]); }, {transposed, sliced});
  EXPECT_TRUE(r.passed) << r;
  EXPECT_EQ(r.runs[0].inputs[0].strides, (Shape{1, 3}));
  EXPECT_EQ(r.runs[0].inputs[1].strides, (Shape{9, 2}));
  EXPECT_EQ(r.runs[0].inputs[1].storage_offset, 1);
}

TEST(Gradcheck, StrideBugIsCaughtOnATransposedInput) {
  Tensor contiguous = leaf(normal_tensor({3, 4}, 15));
  auto op = [](const std::vector<Tensor>& x) { return square_assuming_contiguous(x[0]); };
  EXPECT_TRUE(gradcheck(op, {contiguous}).passed);
  Tensor transposed = leaf(normal_tensor({4, 3}, 15).t());
  GradcheckResult r = gradcheck(op, {transposed});
  EXPECT_FALSE(r.passed) << "a backward that ignores strides passed on a transposed input";
  EXPECT_NE(r.report().find("strides (1,3)"), std::string::npos) << r;
}

TEST(Gradcheck, Float32InputsAreCheckedAsFloat64Copies) {
  Tensor a = leaf(normal_tensor({2, 2}, 16, kFloat32));
  GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return tanh(x[0]); }, {a});
  EXPECT_TRUE(r.passed) << r;
  EXPECT_TRUE(r.runs[0].inputs[0].converted_from_float32);
  EXPECT_NE(r.report().find("float32 input(s) 0 were checked as float64 copies"), std::string::npos) << r;
  EXPECT_EQ(a.dtype(), kFloat32);
}

TEST(Gradcheck, RejectsExpandedInputsAndInputsWithoutGrad) {
  Tensor base = normal_tensor({1, 3}, 17);
  Tensor expanded = leaf(base.expand({4, 3}));
  try {
    gradcheck([](const std::vector<Tensor>& x) { return exp(x[0]); }, {expanded});
    FAIL() << "expected an error for an input with stride 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gradcheck: input 0 (shape (4,3), strides (0,1)) has overlapping memory"),
              std::string::npos)
        << e.what();
  }
  try {
    gradcheck([](const std::vector<Tensor>& x) { return exp(x[0]); }, {base});
    FAIL() << "expected an error when no input requires grad";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gradcheck: no input requires grad"), std::string::npos) << e.what();
  }
}

// --- the fuzzer --------------------------------------------------------------------------------------------

TEST(Gradcheck, FuzzPassesABroadcastAddAndVariesShapesAndLayouts) {
  Tensor a = leaf(normal_tensor({3, 4}, 18));
  Tensor b = leaf(normal_tensor({3, 4}, 19));
  GradcheckOptions options;
  options.fuzz = 12;
  options.fuzz_seed = 7;
  GradcheckResult r = gradcheck([](const std::vector<Tensor>& x) { return add(x[0], x[1], 0.5); }, {a, b}, options);
  EXPECT_TRUE(r.passed) << r;
  ASSERT_EQ(r.runs.size(), 13u);
  bool saw_broadcast_shape = false, saw_strided_layout = false;
  for (size_t i = 1; i < r.runs.size(); ++i) {
    ASSERT_FALSE(r.runs[i].skipped) << r.runs[i].skip_reason;
    for (const InputCheck& c : r.runs[i].inputs) {
      saw_broadcast_shape = saw_broadcast_shape || c.shape != Shape{3, 4};
      saw_strided_layout = saw_strided_layout || c.strides != contiguous_strides(c.shape) || c.storage_offset != 0;
    }
  }
  EXPECT_TRUE(saw_broadcast_shape) << r;
  EXPECT_TRUE(saw_strided_layout) << r;
}

TEST(Gradcheck, FuzzFindsABroadcastBugAndItsRunSeedReplaysIt) {
  Tensor a = leaf(normal_tensor({3, 4}, 20));
  Tensor b = leaf(normal_tensor({3, 4}, 21));
  auto op = [](const std::vector<Tensor>& x) { return mul_with_mean_reduced_grad(x[0], x[1]); };
  ASSERT_TRUE(gradcheck(op, {a, b}).passed) << "the bug only shows when b is broadcast";

  GradcheckOptions options;
  options.fuzz = 20;
  options.fuzz_seed = 100;
  GradcheckResult r = gradcheck(op, {a, b}, options);
  ASSERT_FALSE(r.passed) << "20 fuzz runs never broadcast b\n" << r;
  const std::string report = r.report();
  EXPECT_NE(report.find("replay this run alone: options.fuzz = 1; options.fuzz_seed = "), std::string::npos) << report;

  // Replay the first failing run on its own, from its run seed.
  const GradcheckRun* failing = nullptr;
  for (const GradcheckRun& run : r.runs)
    if (!run.passed) failing = failing ? failing : &run;
  ASSERT_NE(failing, nullptr);
  GradcheckOptions replay;
  replay.fuzz = 1;
  replay.fuzz_seed = failing->run_seed;
  GradcheckResult again = gradcheck(op, {a, b}, replay);
  ASSERT_EQ(again.runs.size(), 2u);
  EXPECT_FALSE(again.runs[1].passed) << again;
  EXPECT_EQ(again.runs[1].what, failing->what);
}

TEST(Gradcheck, FuzzFindsAStrideBug) {
  Tensor x = leaf(normal_tensor({3, 4}, 22));
  GradcheckOptions options;
  options.fuzz = 12;
  options.fuzz_seed = 3;
  options.fuzz_shapes = false;
  GradcheckResult r =
      gradcheck([](const std::vector<Tensor>& in) { return square_assuming_contiguous(in[0]); }, {x}, options);
  EXPECT_FALSE(r.passed) << "12 fuzz runs never made the input strided\n" << r;
}

TEST(Gradcheck, FuzzFallsBackToTheGivenShapesWhenFnRejectsAVariation) {
  // mul(x, y) needs... nothing; but a fn that insists on a (2,3) input rejects every shape change.
  Tensor x = leaf(normal_tensor({2, 3}, 23));
  auto needs_2x3 = [](const std::vector<Tensor>& in) {
    if (in[0].sizes() != Shape{2, 3}) throw Error("needs_2x3: wrong shape " + shape_str(in[0].sizes()));
    return mul(in[0], in[0]);
  };
  GradcheckOptions options;
  options.fuzz = 6;
  GradcheckResult r = gradcheck(needs_2x3, {x}, options);
  EXPECT_TRUE(r.passed) << r;
  for (const GradcheckRun& run : r.runs) {
    EXPECT_FALSE(run.skipped) << run.skip_reason;
    if (!run.inputs.empty()) {
      EXPECT_EQ(run.inputs[0].shape, (Shape{2, 3}));
    }
  }
}

}  // namespace
}  // namespace tg
