// Tape hardening: saved tensors of in-place ops are version-checked, views follow in-place
// writes to their base, .grad accumulates in place, anomaly mode checks every op, deep graphs
// free without recursion, backward works from any thread, the pool survives fork().
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "autograd/ops.h"
#include "autograd/gradcheck.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::error_of;
using test::has_part;

// Every element of t equals v (prints the tensor when not).
::testing::AssertionResult all_equal(const Tensor& t, double v) {
  if (!t.defined()) return ::testing::AssertionFailure() << "tensor is undefined";
  for (double x : t.tolist<double>())
    if (x != v) return ::testing::AssertionFailure() << "expected every element " << v << ", got " << t;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult equals(const Tensor& t, const std::vector<double>& want) {
  if (!t.defined()) return ::testing::AssertionFailure() << "tensor is undefined";
  if (t.tolist<double>() != want) return ::testing::AssertionFailure() << "got " << t;
  return ::testing::AssertionSuccess();
}

// --- one way to save a tensor -------------------------------------------------------------------

TEST(TapeSaved, InPlaceMulSavesItsFactorAndCatchesALaterWriteToIt) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 1.0;
  Tensor o = tensor({3.0, 4.0});
  y.mul_(o);
  o.fill_(100);
  EXPECT_TRUE(has_part(error_of([&] { y.sum().backward(); }),
                       "modified by an inplace operation: saved tensor 1 of MulBackward0"));
}

TEST(TapeSaved, InPlaceMulGivesBothFactorsTheirGradients) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor w = tensor({3.0, 4.0}).requires_grad_();
  Tensor y = x * 1.0;
  y.mul_(w);
  y.sum().backward();
  EXPECT_TRUE(equals(x.grad(), {3, 4}));
  EXPECT_TRUE(equals(w.grad(), {1, 2}));  // self's value before the write
}

TEST(TapeSaved, InPlaceMaskedFillSavesItsMask) {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * 2.0;
  Tensor mask = tensor({true, false, false});
  y.masked_fill_(mask, 0.0);
  mask.fill_(false);  // the mask the backward would read changed
  EXPECT_TRUE(has_part(error_of([&] { y.sum().backward(); }), "saved tensor 0 of MaskedFillBackward0"));
}

TEST(TapeSaved, ASavedTensorIsCheckedWhenReadNotBefore) {
  // pow(x, e) saves x, e and its output; x's gradient reads only x and e. The output is then
  // written in place: the backward never reads it, so this is not an error (and x's gradient is
  // right); reading it would be.
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor e = tensor({2.0, 3.0});
  Tensor y = pow(x, e);
  y.add_(tensor({1.0, 1.0}));
  y.sum().backward();
  EXPECT_TRUE(equals(x.grad(), {2, 12}));  // e * x^(e-1)

  Tensor x2 = tensor({1.0, 2.0}).requires_grad_();
  Tensor e2 = tensor({2.0, 3.0}).requires_grad_();
  Tensor y2 = pow(x2, e2);
  y2.add_(tensor({1.0, 1.0}));
  EXPECT_TRUE(has_part(error_of([&] { y2.sum().backward(); }), "saved tensor 2 of PowBackward1"));
}

// --- views follow in-place writes to their base ---------------------------------------------------

struct ViewCase {
  const char* name;
  Tensor (*take)(const Tensor& h);
  double want;  // each element of x.grad (all of x is read by these views unless noted)
};

TEST(TapeViews, AViewTakenBeforeAnInPlaceWriteToItsBaseFollowsTheBase) {
  const ViewCase cases[] = {
      {"view", [](const Tensor& h) { return h.view({6}); }, 6},
      {"t", [](const Tensor& h) { return h.t(); }, 6},
      {"transpose", [](const Tensor& h) { return h.transpose(0, 1); }, 6},
      {"reshape", [](const Tensor& h) { return h.reshape({3, 2}); }, 6},
      {"view of a view", [](const Tensor& h) { return h.view({6}).view({3, 2}); }, 6},
  };
  for (const ViewCase& c : cases) {
    Tensor x = ones({2, 3}, kFloat64).requires_grad_();
    Tensor h = x * 2.0;
    Tensor v = c.take(h);
    h.mul_(3.0);
    EXPECT_TRUE(all_equal(v, 6.0)) << c.name;
    v.sum().backward();
    EXPECT_TRUE(all_equal(x.grad(), c.want)) << c.name;
  }
}

TEST(TapeViews, PartialViewsSendGradientOnlyToTheElementsTheyRead) {
  {
    Tensor x = ones({2, 3}, kFloat64).requires_grad_();
    Tensor h = x * 2.0;
    Tensor v = h[0];
    h.mul_(3.0);
    v.sum().backward();
    EXPECT_TRUE(equals(x.grad(), {6, 6, 6, 0, 0, 0}));
  }
  {
    Tensor x = ones({2, 3}, kFloat64).requires_grad_();
    Tensor h = x * 2.0;
    Tensor v = h.narrow(1, 1, 2);
    h.mul_(3.0);
    v.sum().backward();
    EXPECT_TRUE(equals(x.grad(), {0, 6, 6, 0, 6, 6}));
  }
  {
    Tensor x = ones({4}, kFloat64).requires_grad_();
    Tensor h = x * 2.0;
    Tensor v = h.slice(0, 0, 4, 2);
    h.mul_(3.0);
    v.sum().backward();
    EXPECT_TRUE(equals(x.grad(), {6, 0, 6, 0}));
  }
}

TEST(TapeViews, AnExpandedViewAddsTheGradientOfEveryReadOfOneElement) {
  Tensor x = ones({1, 3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor v = h.expand({4, 3});
  h.mul_(3.0);
  v.sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), 24.0));  // 4 reads x 2 x 3
}

TEST(TapeViews, MaskedFillOfTheBaseZeroesTheViewsGradient) {
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor v = h.view({6});
  h.masked_fill_(ones({2, 3}, kBool), 0.0);
  EXPECT_TRUE(all_equal(v, 0.0));
  v.sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), 0.0));
}

TEST(TapeViews, CopyIntoABaseThatNeededNoGradGivesItsViewsAHistory) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor h = zeros({4}, kFloat64);
  Tensor v = h.view({2, 2});
  EXPECT_FALSE(v.requires_grad());
  h.copy_(x * 5.0);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_EQ(v.grad_fn()->name, "AsStridedBackward0");
  (v * v).sum().backward();
  EXPECT_TRUE(equals(x.grad(), {50, 100, 150, 200}));  // d/dx (5x)^2
}

TEST(TapeViews, AViewUsedBeforeTheWriteKeepsItsOldHistoryAndIsVersionChecked) {
  Tensor x = ones({3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor v = h.view({3});
  Tensor before = v.sum();    // reads v's old history; saves nothing
  Tensor squared = v * v;     // saves v
  h.mul_(3.0);
  before.backward();
  EXPECT_TRUE(all_equal(x.grad(), 2.0));
  EXPECT_TRUE(has_part(error_of([&] { squared.sum().backward(); }), "modified by an inplace operation"));
}

TEST(TapeViews, RetainGradWorksOnARebasedView) {
  Tensor x = ones({2, 2}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor v = h.view({4});
  h.add_(ones({2, 2}, kFloat64));
  v.retain_grad();
  (v * 2.0).sum().backward();
  EXPECT_TRUE(all_equal(v.grad(), 2.0));
  EXPECT_TRUE(all_equal(x.grad(), 4.0));
}

TEST(TapeViews, InPlaceOnAViewRewritesItsBasesHistory) {
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  h[0].mul_(3.0);
  EXPECT_TRUE(equals(h, {6, 6, 6, 2, 2, 2}));
  EXPECT_EQ(h.grad_fn()->name, "CopySlices");
  h.sum().backward();
  EXPECT_TRUE(equals(x.grad(), {6, 6, 6, 2, 2, 2}));
}

TEST(TapeViews, TheWrittenViewAndOtherViewsFollowTheBase) {
  Tensor x = ones({2, 3}, kFloat64).requires_grad_();
  Tensor h = x * 2.0;
  Tensor u = h.view({6});
  Tensor v = h.narrow(1, 1, 2);
  v.add_(ones({2, 2}, kFloat64));
  (v * v).sum().backward(Tensor(), true);  // d/dx (2x + 1)^2 = 4 (2x + 1) = 12 inside
  EXPECT_TRUE(equals(x.grad(), {0, 12, 12, 0, 12, 12}));
  x.zero_grad();
  (u * 1.0).sum().backward();
  EXPECT_TRUE(all_equal(x.grad(), 2.0));
}

TEST(TapeViews, AnInPlaceOpOnAViewSendsGradientsToItsOtherInputs) {
  Tensor w = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor h = zeros({2, 3}, kFloat64);
  h[1].copy_(w * 2.0);
  EXPECT_TRUE(h.requires_grad());
  (h * h).sum().backward();
  EXPECT_TRUE(equals(w.grad(), {8, 16, 24}));  // d/dw (2w)^2

  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor y = x * 1.0;
  Tensor o = tensor({5.0, 7.0}).requires_grad_();
  y.slice(0, 0, 4, 2).mul_(o);  // y = [5, 2, 21, 4]
  EXPECT_TRUE(equals(y, {5, 2, 21, 4}));
  y.sum().backward();
  EXPECT_TRUE(equals(x.grad(), {5, 1, 7, 1}));
  EXPECT_TRUE(equals(o.grad(), {1, 3}));
}

TEST(TapeViews, MaskedFillOnAViewZeroesTheFilledGradient) {
  Tensor x = ones({2, 2}, kFloat64).requires_grad_();
  Tensor h = x * 3.0;
  h.t()[0].masked_fill_(tensor({true, false}), 0.0);  // h[0][0] = 0
  EXPECT_TRUE(equals(h, {0, 3, 3, 3}));
  h.sum().backward();
  EXPECT_TRUE(equals(x.grad(), {0, 3, 3, 3}));
}

TEST(TapeViews, InPlaceOnAViewOfALeafThatRequiresGradIsAnError) {
  Tensor x = ones({2, 3}).requires_grad_();
  EXPECT_EQ(error_of([&] { x[0].mul_(3.0); }),
            "mul_: a view of a leaf Variable that requires grad is being used in an in-place operation.");
  NoGradGuard no_grad;  // as torch.no_grad(): an update of parameters through a view
  x[0].mul_(3.0);
  EXPECT_TRUE(equals(x, {3, 3, 3, 1, 1, 1}));
}

// --- .grad accumulates in place -------------------------------------------------------------------

TEST(TapeGrad, AccumulatesIntoTheExistingBufferSoAnEarlierHandleSeesIt) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  (x * 3.0).sum().backward();
  Tensor g = x.grad();
  const void* buffer = g.raw_data();
  (x * 3.0).sum().backward();
  EXPECT_TRUE(equals(g, {6, 6}));
  EXPECT_EQ(x.grad().raw_data(), buffer);
  x.zero_grad();
  (x * 3.0).sum().backward();
  EXPECT_TRUE(equals(x.grad(), {3, 3}));
  EXPECT_TRUE(equals(g, {6, 6}));  // the old buffer was let go, not overwritten
}

TEST(TapeGrad, RetainedGradOfANonLeafAccumulatesInPlaceToo) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2.0;
  y.retain_grad();
  Tensor loss = (y * y).sum();
  loss.backward(Tensor(), true);
  Tensor g = y.grad();
  loss.backward();
  EXPECT_TRUE(equals(g, {8, 16}));
}

TEST(TapeGrad, TheFirstGradientIsACopyNotAnAliasOfTheIncomingOne) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor seed = tensor({1.0, 1.0});
  x.backward(seed);
  seed.fill_(7.0);
  EXPECT_TRUE(equals(x.grad(), {1, 1}));
}

// --- anomaly mode checks every op ---------------------------------------------------------------

TEST(TapeAnomaly, ForwardCheckRunsWhenNothingRequiresGrad) {
  AnomalyModeGuard on;
  Tensor z = zeros({2});
  const std::string e = error_of([&] { div(z, z); });
  EXPECT_TRUE(has_part(e, "anomaly: DivBackward0 (not recorded: no input requires grad) forward produced 2 NaN"));
  const std::string s = error_of([&] { z / 0.0; });
  EXPECT_TRUE(has_part(s, "anomaly: DivBackward0 (not recorded"));
}

TEST(TapeAnomaly, ForwardCheckRunsUnderNoGradAndForInPlaceOps) {
  AnomalyModeGuard on;
  {
    NoGradGuard no_grad;
    Tensor z = zeros({3});
    EXPECT_TRUE(has_part(error_of([&] { log(z) * 0.0; }), "(not recorded: grad mode is off)"));
  }
  Tensor z = zeros({3});
  EXPECT_TRUE(has_part(error_of([&] { z.div_(0.0); }), "anomaly: DivBackward0"));
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 1.0;
  const std::string e = error_of([&] { y.fill_(NAN); });  // written directly, no inner op
  EXPECT_TRUE(has_part(e, "anomaly: FillBackward0 (tape entry #"));
  Tensor w = zeros({2});
  EXPECT_TRUE(has_part(error_of([&] { w.fill_(NAN); }), "anomaly: FillBackward0 (not recorded"));
}

TEST(TapeAnomaly, MessagesCiteOnlyEntriesThatExist) {
  AnomalyModeGuard on;
  Tensor z = zeros({2});
  const std::string e = error_of([&] { div(z, z); });
  EXPECT_EQ(e.find("tape entry"), std::string::npos) << e;
}

// --- deep graphs --------------------------------------------------------------------------------

TEST(TapeDeep, AMillionOpChainIsFreedWithoutRecursion) {
  Tensor x = ones({1}).requires_grad_();
  {
    Tensor y = x;
    for (int i = 0; i < 1000000; ++i) y = y * 1.0;
    EXPECT_EQ(y.grad_fn()->name, "MulBackward0");
  }  // the whole chain is released here
  EXPECT_EQ(tape_size(), 0u);
}

TEST(TapeDeep, ARunningTotalOverManyStepsBackpropagatesAndFrees) {
  Tensor w = tensor({0.5}).requires_grad_();
  Tensor total = zeros({1});
  for (int i = 0; i < 100000; ++i) total = total + w;
  total.backward(ones({1}));
  EXPECT_EQ(w.grad().item(), 100000.0);
  total = Tensor();
  EXPECT_EQ(tape_size(), 0u);
}

// --- threads and fork ---------------------------------------------------------------------------

TEST(TapeThreads, BackwardWorksFromAnotherThreadAndLeavesNothingBehind) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = (x * 2.0).sum();
  std::string error;
  std::thread([&] {
    try {
      y.backward(Tensor(), true);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  EXPECT_EQ(error, "");
  EXPECT_TRUE(equals(x.grad(), {2, 2}));
  x.zero_grad();
  y.backward();
  EXPECT_TRUE(equals(x.grad(), {2, 2}));
}

TEST(TapeThreads, GraphsBuiltOnTwoThreadsJoinInOneBackward) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor a = x * 3.0;  // this thread
  Tensor b;
  std::thread([&] { b = a * a; }).join();  // another thread, on top of a
  (b + a).sum().backward();
  EXPECT_TRUE(equals(x.grad(), {3 * 2 * 3 + 3, 3 * 2 * 6 + 3}));
}

TEST(TapeThreads, GradModeIsPerThread) {
  NoGradGuard no_grad;
  bool other_thread = false;
  std::thread([&] { other_thread = grad_mode_enabled(); }).join();
  EXPECT_TRUE(other_thread);
  EXPECT_FALSE(grad_mode_enabled());
}

TEST(ParallelFork, AChildProcessCanRunBatchedMatmulAfterTheParentDid) {
  set_num_threads(2);
  Tensor a = ones({8, 16, 16}), b = ones({8, 16, 16});
  ASSERT_EQ(matmul(a, b).sum().item(), 8.0 * 16 * 16 * 16);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a hang becomes a failure, not a stuck test
    const Tensor big = ones({300, 300});
    set_num_threads(2);  // stays one thread in a forked child
    const bool ok = matmul(a, b).sum().item() == 8.0 * 16 * 16 * 16 && matmul(big, big).sum().item() == 300.0 * 300 * 300 &&
                    (ones({100000}) * 2.0).sum().item() == 200000.0 && get_num_threads() == 1;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit normally (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(matmul(a, b).sum().item(), 8.0 * 16 * 16 * 16);  // the parent's threads still work
  EXPECT_EQ(get_num_threads(), 2);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

TEST(TapeViews, InPlaceThroughViewsPassesGradcheck) {
  Tensor a = test::normal_tensor({3, 4}, 11).requires_grad_();
  Tensor b = test::normal_tensor({4}, 12).requires_grad_();
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor h = in[0] * 1.5;
    Tensor col = h.t()[1];  // a strided view taken before the writes
    h[2].mul_(in[1]);       // in place on a view, with another input
    h.narrow(1, 0, 2).add_(in[0].narrow(1, 1, 2) * in[0].narrow(1, 1, 2));
    h.masked_fill_(h > 2.0, 0.5);
    return (col * h.sum(1)).sum() + h.exp().sum();
  };
  GradcheckResult r = gradcheck(fn, {a, b});
  EXPECT_TRUE(r.passed) << r;
}

}  // namespace
}  // namespace tg
