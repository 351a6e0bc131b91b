// tests/autograd/test_checkpoint.cpp — tg::checkpoint (autograd/checkpoint.h): the same values and
// gradients, bit for bit, as running fn on the tape, dropout's draws included; less kept on the tape.
#include <gtest/gtest.h>

#include "autograd/checkpoint.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using test::leaf;
using test::normal_tensor;
using test::same_bytes;

// tanh(x W^T + b) -> dropout -> * 3 : parameters reached inside fn, random draws, several ops.
struct Piece {
  Tensor w = leaf(normal_tensor({6, 5}, 1, kFloat32));
  Tensor b = leaf(normal_tensor({6}, 2, kFloat32));
  double p = 0.25;
  Tensor operator()(const Tensor& x) const {
    return mul(dropout(tanh(add(matmul(x, w.t()), b)), p, /*training=*/true), 3.0);
  }
};

struct PieceRun {
  Tensor y, dx, dw, db;
  std::vector<uint8_t> rng_after;  // the default generator after forward and backward
};

PieceRun run(const Piece& piece, bool checkpointed) {
  manual_seed(7);
  Tensor x = leaf(normal_tensor({4, 5}, 3, kFloat32));
  Tensor h = mul(x, 2.0);  // x reaches the piece through an op, as a block's input does
  Tensor y = checkpointed ? checkpoint([&piece](const Tensor& in) { return piece(in); }, h) : piece(h);
  Tensor extra = dropout(ones({8}), 0.5, true);  // draws after the piece: must be the same draws
  (y.pow(2.0).sum() + extra.sum()).backward();
  PieceRun r{y.detach(), x.grad(), piece.w.grad(), piece.b.grad(), default_generator().get_state()};
  return r;
}

TEST(ActivationCheckpoint, SameValuesGradientsAndRandomStreamAsWithout) {
  Piece plain, checkpointed;
  checkpointed.w = leaf(plain.w.detach().clone());
  checkpointed.b = leaf(plain.b.detach().clone());
  const PieceRun want = run(plain, false), got = run(checkpointed, true);
  EXPECT_TRUE(same_bytes(got.y, want.y));
  EXPECT_TRUE(same_bytes(got.dx, want.dx));
  EXPECT_TRUE(same_bytes(got.dw, want.dw));
  EXPECT_TRUE(same_bytes(got.db, want.db));
  EXPECT_EQ(got.rng_after, want.rng_after) << "the replay changed the default generator";
}

TEST(ActivationCheckpoint, KeepsOnlyItsInputOnTheTape) {
  Tensor x = leaf(normal_tensor({64, 64}, 4, kFloat32));
  Tensor w = leaf(normal_tensor({64, 64}, 5, kFloat32));
  auto fn = [&w](const Tensor& in) { return tanh(matmul(tanh(matmul(in, w)), w)); };
  Tensor h = mul(x, 1.0);
  Tensor y = checkpoint(fn, h);
  const auto entries = tape_entries();
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries.back()->name, "CheckpointFunctionBackward");
  EXPECT_EQ(entries.back()->saved_bytes(), size_t{64 * 64 * 4});  // h, nothing of fn's four ops
  y.sum().backward();
  EXPECT_EQ(tape_size(), 0u);  // the replayed graph was released too
  EXPECT_TRUE(x.grad().defined());
  EXPECT_TRUE(w.grad().defined());
}

TEST(ActivationCheckpoint, GradcheckInFloat64) {
  Tensor w = normal_tensor({3, 4}, 6);
  GradcheckFn fn = [](const std::vector<Tensor>& in) {
    const Tensor w = in[1];
    return checkpoint([w](const Tensor& x) { return mul(tanh(matmul(x, w)), x.sum()); }, mul(in[0], 1.0));
  };
  assert_gradcheck(fn, {leaf(normal_tensor({2, 3}, 7)), leaf(w)});
}

TEST(ActivationCheckpoint, WithoutGradModeOrAGradientItJustRuns) {
  Tensor x = leaf(normal_tensor({2, 2}, 8, kFloat32));
  int calls = 0;
  auto fn = [&calls](const Tensor& in) { ++calls; return mul(in, 2.0); };
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(checkpoint(fn, x).requires_grad());
  }
  Tensor w = leaf(normal_tensor({2, 2}, 9, kFloat32));
  Tensor constant = normal_tensor({2, 2}, 10, kFloat32);
  Tensor y = checkpoint([&](const Tensor& in) { ++calls; return mul(in, w); }, constant);
  EXPECT_EQ(y.grad_fn()->name, "MulBackward0");  // recorded as it is: w still gets its gradient
  y.sum().backward();
  EXPECT_TRUE(same_bytes(w.grad(), constant));
  EXPECT_EQ(calls, 2);
}

TEST(ActivationCheckpoint, AFunctionThatReturnsItsInputIsRecordedAsItIs) {
  Tensor x = leaf(normal_tensor({3}, 11, kFloat32));
  Tensor h = mul(x, 2.0);
  Tensor y = checkpoint([](const Tensor& in) { return in.view({3, 1}); }, h);
  EXPECT_NE(y.grad_fn()->name, "CheckpointFunctionBackward");
  y.sum().backward();
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(ActivationCheckpoint, AnErrorInTheReplayLeavesTheGeneratorAsItWas) {
  Tensor x = leaf(normal_tensor({4}, 12, kFloat32));
  int calls = 0;
  Tensor y = checkpoint([&calls](const Tensor& in) {
    if (++calls == 2) throw Error("replay failed");
    return dropout(in, 0.5, true);
  }, mul(x, 1.0));
  const std::vector<uint8_t> before = default_generator().get_state();
  EXPECT_TRUE(test::has_part(test::error_of([&] { y.sum().backward(); }), "replay failed"));
  EXPECT_EQ(default_generator().get_state(), before);
}

}  // namespace
}  // namespace tg
