// The tape: what gets recorded, backward's results, release after backward, retain_graph,
// version counters, no-grad, anomaly mode, and the printed view of the tape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "autograd/ops.h"
#include "autograd/record.h"
#include "autograd/runtime/memory.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace {

using tg::Shape;
using tg::Tensor;
using tg::test::error_of;
using tg::test::has_part;

TEST(Tape, OpsOnTensorsThatNeedNoGradRecordNothing) {
  Tensor a = tg::ones({2, 2});
  Tensor b = (a * 3.0).exp().sum();
  EXPECT_FALSE(b.requires_grad());
  EXPECT_EQ(tg::tape_size(), 0u);
}

TEST(Tape, BackwardGivesProductRuleAndReleasesTheTape) {
  Tensor x = tg::tensor({1.0, 2.0, 3.0}, tg::kFloat64).requires_grad_();
  Tensor y = tg::tensor({4.0, 5.0, 6.0}, tg::kFloat64).requires_grad_();
  Tensor loss = (x * y + x).sum();  // dl/dx = y + 1, dl/dy = x
  EXPECT_EQ(tg::tape_size(), 3u);
  loss.backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(y.grad().tolist<double>(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(tg::tape_size(), 0u) << tg::tape_str();
}

TEST(Tape, GradientsAccumulateAcrossUsesAndAcrossBackwardCalls) {
  Tensor x = tg::tensor({2.0}, tg::kFloat64).requires_grad_();
  (x * x + x * 3.0).sum().backward();  // 2x + 3 = 7
  EXPECT_EQ(x.grad().item(), 7.0);
  (x * 2.0).sum().backward();          // + 2
  EXPECT_EQ(x.grad().item(), 9.0);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Tape, BroadcastGradientsAreSummedBackToTheInputShape) {
  Tensor a = tg::ones({2, 3}, tg::kFloat64).requires_grad_();
  Tensor bias = tg::tensor({1.0, 2.0, 3.0}, tg::kFloat64).requires_grad_();
  Tensor col = tg::ones({2, 1}, tg::kFloat64).requires_grad_();
  ((a + bias) * col).sum().backward();
  EXPECT_EQ(bias.grad().sizes(), (Shape{3}));
  EXPECT_EQ(bias.grad().tolist<double>(), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(col.grad().sizes(), (Shape{2, 1}));
  EXPECT_EQ(col.grad().tolist<double>(), (std::vector<double>{9, 9}));  // sum of (1 + bias)
}

TEST(Tape, GradientsFlowThroughViews) {
  Tensor x = tg::arange(0.0, 6.0, 1.0, tg::kFloat64).reshape({2, 3}).detach().requires_grad_();
  Tensor y = x.t().select(0, 1) * tg::tensor({10.0, 100.0}, tg::kFloat64);  // x[:,1] scaled
  y.sum().backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{0, 10, 0, 0, 100, 0}));
}

TEST(Tape, SecondBackwardThroughReleasedEntriesIsAnError) {
  Tensor x = tg::ones({3}).requires_grad_();
  Tensor loss = (x * 2.0).exp().sum();
  loss.backward();
  EXPECT_TRUE(has_part(error_of([&] { loss.backward(); }), "backward through the graph a second time"));
}

// A new loss over an entry an earlier backward released: the pass adds a gradient to that entry,
// then stops at it with the error; the gradient it added is not left behind in the entry.
TEST(Tape, ABackwardStoppedAtAReleasedEntryLeavesNoGradientInIt) {
  Tensor x = tg::ones({1000}, tg::kFloat64).requires_grad_();
  Tensor h = x.exp();  // ExpBackward0, released by the first backward
  h.sum().backward();
  const int64_t live_before = tg::memory_stats().live_bytes;
  {
    Tensor loss = (h * 3.0).sum();
    EXPECT_TRUE(has_part(error_of([&] { loss.backward(); }), "backward through the graph a second time"));
  }
  EXPECT_EQ(tg::memory_stats().live_bytes, live_before) << "h's entry still holds a (1000) gradient";
}

// x itself, recorded as an entry whose backward writes down the bytes of tensors alive when it runs.
Tensor identity_noting_live_bytes(const Tensor& x, int64_t* live_at_backward) {
  Tensor out;
  {
    tg::NoGradGuard parts;
    out = x * 1.0;
  }
  tg::record("NoteLiveBytesBackward", {x}, out, {}, [live_at_backward](const tg::BackwardArgs& ctx) {
    *live_at_backward = tg::memory_stats().live_bytes;
    return tg::Grads{ctx.grad_out};
  });
  return out;
}

TEST(Tape, BackwardFreesWhatAnEntrySavedOnceTheEntryHasRun) {
  constexpr int64_t kBytes = 1000 * 8;  // one (1000) float64 tensor
  for (const bool retain_graph : {false, true}) {
    Tensor x = tg::ones({1000}, tg::kFloat64).requires_grad_();
    int64_t live_at_first_entry = 0;
    Tensor h = identity_noting_live_bytes(x, &live_at_first_entry);
    for (int i = 0; i < 5; ++i) h = h.exp();  // each ExpBackward0 keeps its output; only the tape holds 4 of them
    Tensor loss = h.sum();
    const int64_t live_before = tg::memory_stats().live_bytes;
    loss.backward(Tensor(), retain_graph);  // the first entry runs last
    if (retain_graph) {
      EXPECT_GE(live_at_first_entry, live_before) << "a retained graph keeps what its entries saved";
    } else {
      EXPECT_LE(live_at_first_entry, live_before - 2 * kBytes)
          << "the 4 exp outputs only the tape held are freed before the pass ends (less a gradient or two)";
    }
    EXPECT_EQ(x.grad().numel(), 1000);
  }
}

TEST(Tape, RetainGraphAllowsASecondBackward) {
  Tensor x = tg::ones({3}, tg::kFloat64).requires_grad_();
  Tensor loss = (x * 2.0).sum();
  loss.backward(Tensor(), /*retain_graph=*/true);
  EXPECT_GT(tg::tape_size(), 0u);
  loss.backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{4, 4, 4}));
  EXPECT_EQ(tg::tape_size(), 0u);
}

TEST(Tape, SavedTensorChangedInPlaceIsDetectedAtBackward) {
  Tensor x = tg::ones({3}).requires_grad_();
  Tensor y = x.exp();  // ExpBackward0 saves its output y
  Tensor z = y.sum();
  y.add_(tg::ones({3}));  // modifies the saved output
  const std::string msg = error_of([&] { z.backward(); });
  EXPECT_TRUE(has_part(msg, "modified by an inplace operation"));
  EXPECT_TRUE(has_part(msg, "ExpBackward0"));
  EXPECT_TRUE(has_part(msg, "is at version 1; expected version 0"));
}

TEST(Tape, InPlaceOnALeafThatRequiresGradIsAnError) {
  Tensor w = tg::ones({3}).requires_grad_();
  EXPECT_TRUE(has_part(error_of([&] { w.add_(tg::ones({3})); }), "a leaf Variable that requires grad"));
  tg::NoGradGuard no_grad;  // an optimizer step does exactly this, without grad mode
  w.add_(tg::ones({3}));
  EXPECT_EQ(w.at({0}), 2.0);
}

TEST(Tape, InPlaceOnANonLeafKeepsTheGradientCorrect) {
  Tensor x = tg::tensor({1.0, 2.0, 3.0}, tg::kFloat64).requires_grad_();
  Tensor y = x * 2.0;
  y.masked_fill_(tg::tensor({false, true, false}), 0.0);
  y.mul_(3.0);
  y.sum().backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{6, 0, 6}));
}

// add_, sub_, mul_ and div_ run the backward formulas of add, sub, mul and div (ops/derivatives.h):
// the same gradients, bit for bit, with a broadcast other.
TEST(Tape, InPlaceArithmeticGivesTheGradientsOfItsOutOfPlaceOp) {
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  using InPlace = void (*)(Tensor&, const Tensor&);
  const std::vector<std::tuple<const char*, Op, InPlace>> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return tg::add(a, b, 0.5); },
       [](Tensor& a, const Tensor& b) { a.add_(b, 0.5); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return tg::sub(a, b, 2.0); },
       [](Tensor& a, const Tensor& b) { a.sub_(b, 2.0); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return tg::mul(a, b); },
       [](Tensor& a, const Tensor& b) { a.mul_(b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return tg::div(a, b); },
       [](Tensor& a, const Tensor& b) { a.div_(b); }},
  };
  for (const auto& [name, op, in_place] : cases) {
    SCOPED_TRACE(name);
    const Tensor x = tg::tensor({0.5, -1.25, 2.0, 3.5, -0.75, 1.5}, tg::kFloat64).view({2, 3}).requires_grad_();
    const Tensor o = tg::tensor({1.5, -2.5, 0.25}, tg::kFloat64).requires_grad_();
    const Tensor g = tg::tensor({0.3, -0.7, 1.1, 0.9, -1.3, 0.2}, tg::kFloat64).view({2, 3});
    op(x * 1.0, o).backward(g);
    const std::vector<double> dx = x.grad().tolist<double>(), dother = o.grad().tolist<double>();
    x.zero_grad();
    o.zero_grad();
    Tensor y = x * 1.0;
    in_place(y, o);
    y.backward(g);
    EXPECT_EQ(x.grad().tolist<double>(), dx);
    EXPECT_EQ(o.grad().tolist<double>(), dother);
  }
}

// Every write into an existing tensor checks, by loops.h's check_broadcasts_to, that the other
// operand broadcasts to the written tensor's shape.
TEST(Tape, InPlaceWritesNameTheOperandThatDoesNotBroadcast) {
  Tensor t = tg::zeros({1, 4});
  EXPECT_EQ(error_of([&] { t.add_(tg::ones({3, 4})); }),
            "add_: other of shape (3,4) cannot be broadcast to (1,4) (dim 0: 3 vs 1)");
  EXPECT_EQ(error_of([&] { t.mul_(tg::ones({3, 4})); }),
            "mul_: other of shape (3,4) cannot be broadcast to (1,4) (dim 0: 3 vs 1)");
  EXPECT_EQ(error_of([&] { t.div_(tg::ones({2, 1, 4})); }),
            "div_: other of shape (2,1,4) cannot be broadcast to (1,4) (3 dims, more than 2)");
  EXPECT_EQ(error_of([&] { t.copy_(tg::ones({5})); }),
            "copy_: src of shape (5) cannot be broadcast to (1,4) (dim 1: 5 vs 4)");
  EXPECT_EQ(error_of([&] { t.masked_fill_(tg::ones({2, 4}).to_bool(), 1.0); }),
            "masked_fill: mask of shape (2,4) cannot be broadcast to (1,4) (dim 0: 2 vs 1)");
  EXPECT_EQ(error_of([&] { tg::masked_fill(t, tg::ones({4, 1}).to_bool(), 1.0); }),
            "masked_fill: mask of shape (4,1) cannot be broadcast to (1,4) (dim 0: 4 vs 1)");
  EXPECT_EQ(t._version(), 0u);  // nothing was written
}

// An op that fills the tensor it has just made writes nothing in place: its result starts at
// version 0, as a PyTorch result does. Writes into an existing tensor count one each.
TEST(Tape, ResultsStartAtVersionZeroAndEachInPlaceWriteCountsOne) {
  const Tensor a = tg::ones({2, 3}), b = tg::zeros({1, 3});
  EXPECT_EQ(tg::cat({a, b}, 0)._version(), 0u);
  EXPECT_EQ(tg::stack({a, a}, 0)._version(), 0u);
  EXPECT_EQ(tg::where(tg::ones({2, 3}).to_bool(), a, b)._version(), 0u);
  Tensor t = tg::zeros({2, 3});
  t.add_(a);
  t.mul_(2.0);
  t.copy_(b);
  t.narrow(0, 0, 1).fill_(1.0);  // through a view: the same storage
  EXPECT_EQ(t._version(), 4u);
}

TEST(Tape, NoGradGuardRecordsNothingAndDetachCutsTheTape) {
  Tensor x = tg::ones({2}).requires_grad_();
  {
    tg::NoGradGuard no_grad;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
  }
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(x));
  EXPECT_EQ(tg::tape_size(), 0u);
}

TEST(Tape, RetainGradKeepsTheGradientOfANonLeaf) {
  Tensor x = tg::tensor({1.0, 2.0}, tg::kFloat64).requires_grad_();
  Tensor h = x * 3.0;
  h.retain_grad();
  (h * h).sum().backward();
  EXPECT_EQ(h.grad().tolist<double>(), (std::vector<double>{6, 12}));
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{18, 36}));
}

TEST(Tape, NonScalarBackwardNeedsAGradient) {
  Tensor x = tg::ones({2}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_TRUE(has_part(error_of([&] { y.backward(); }), "grad can be implicitly created only for scalar outputs"));
  EXPECT_TRUE(has_part(error_of([&] { y.backward(tg::ones({3})); }), "gradient has shape (3) but the tensor has shape (2)"));
  y.backward(tg::tensor({1.0, 10.0}));
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{2, 20}));
}

TEST(Tape, BackwardOnATensorThatNeedsNoGradIsAnError) {
  EXPECT_TRUE(has_part(error_of([] { tg::ones({1}).backward(); }), "does not require grad"));
}

TEST(Tape, UnreachedGraphsFreeThemselves) {
  Tensor w = tg::ones({4}).requires_grad_();
  for (int i = 0; i < 5000; ++i) (w * 2.0).sum();  // results dropped without backward
  EXPECT_EQ(tg::tape_size(), 0u);
}

TEST(Tape, PrintsOneLinePerEntryWithBytesKeptAndATotal) {
  Tensor x = tg::ones({6, 3}).requires_grad_();
  Tensor y = (x * x).exp().sum();
  const std::string s = tg::tape_str();
  EXPECT_TRUE(has_part(s, "tape: 3 entries"));
  EXPECT_TRUE(has_part(s, "MulBackward0"));
  EXPECT_TRUE(has_part(s, "in (6,3) (6,3)"));
  EXPECT_TRUE(has_part(s, "ExpBackward0"));
  EXPECT_TRUE(has_part(s, "keeps 72 B"));  // exp keeps its (6,3) float32 output
  EXPECT_TRUE(has_part(s, "total kept for backward: 144 B"));  // x (saved by mul) + exp's output
  y.backward();
  EXPECT_EQ(tg::tape_size(), 0u);
}

TEST(Tape, AnomalyModeNamesTheForwardOpThatMadeANaN) {
  tg::AnomalyModeGuard anomaly;
  Tensor x = tg::tensor({-1.0, 4.0}).requires_grad_();
  const std::string msg = error_of([&] { x.log(); });
  EXPECT_TRUE(has_part(msg, "anomaly: LogBackward0"));
  EXPECT_TRUE(has_part(msg, "forward produced 1 NaN"));
  EXPECT_TRUE(has_part(msg, "input 0: (2) float32 min -1 max 4"));
}

TEST(Tape, AnomalyModeAllowsMinusInfinityInForwardValues) {
  tg::AnomalyModeGuard anomaly;
  Tensor s = tg::ones({2, 2}).requires_grad_();
  Tensor m = s.masked_fill(tg::triu(tg::ones({2, 2}), 1) == 1, -INFINITY);
  EXPECT_TRUE(std::isinf(m.at({0, 1})));
}

TEST(Tape, AnomalyModeNamesTheBackwardOpThatMadeAnInf) {
  Tensor x = tg::tensor({0.0, 4.0}).requires_grad_();
  Tensor y = x.sqrt().sum();  // d sqrt at 0 = inf
  tg::AnomalyModeGuard anomaly;
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_TRUE(has_part(msg, "anomaly: SqrtBackward0"));
  EXPECT_TRUE(has_part(msg, "backward produced 0 NaN and 1 Inf"));
}

}  // namespace

namespace {

// ctest runs this test twice: as is, and with TG_DETECT_ANOMALY=1 (tests/CMakeLists.txt).
TEST(Tape, AnomalyModeFollowsTheEnvironmentVariable) {
  const char* env = std::getenv("TG_DETECT_ANOMALY");
  const bool asked = env != nullptr && std::string(env) == "1";
  EXPECT_EQ(tg::anomaly_mode_enabled(), asked);
  if (!asked) return;
  Tensor x = tg::tensor({-1.0}).requires_grad_();
  EXPECT_TRUE(has_part(error_of([&] { x.log(); }), "anomaly: LogBackward0"));
}

}  // namespace
