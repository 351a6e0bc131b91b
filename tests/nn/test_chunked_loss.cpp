// tests/nn/test_chunked_loss.cpp — nn::chunked_cross_entropy (nn/chunked_loss.h): the loss and
// the gradients of cross_entropy(head(hidden), targets) to rounding, for any chunk size and with
// ignored rows; finite differences in float64; the logits never whole in memory.
#include <gtest/gtest.h>

#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/runtime/memory.h"
#include "nn/chunked_loss.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::all_close;
using test::leaf;
using test::normal_tensor;

Tensor some_targets(int64_t N, int64_t V, int64_t ignore_every) {
  std::vector<int64_t> t;
  for (int64_t i = 0; i < N; ++i) t.push_back(ignore_every > 0 && i % ignore_every == 1 ? -100 : (7 * i + 3) % V);
  return from_vector(t, {N});
}

struct LossAndGrads {
  double loss;
  Tensor dhidden, dweight;
};

LossAndGrads run(ScalarType dtype, int64_t chunk_rows, int64_t ignore_every) {
  manual_seed(4);
  Linear head(16, 50, /*bias=*/false);
  head.to(dtype);
  Tensor hidden = leaf(normal_tensor({37, 16}, 5, dtype));
  const Tensor targets = some_targets(37, 50, ignore_every);
  Tensor loss = chunk_rows > 0 ? chunked_cross_entropy(head, hidden, targets, chunk_rows)
                               : cross_entropy(head.forward(hidden), targets);
  loss.backward();
  return {loss.item<double>(), hidden.grad(), head.weight.grad()};
}

TEST(ChunkedCrossEntropy, EqualsThePlainLossAndGradientsForAnyChunkSize) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const double tol = dtype == kFloat32 ? 1e-6 : 1e-14;
    for (int64_t ignore_every : {0, 3}) {
      const LossAndGrads want = run(dtype, 0, ignore_every);
      for (int64_t chunk : {1, 5, 16, 37, 100}) {
        const LossAndGrads got = run(dtype, chunk, ignore_every);
        EXPECT_NEAR(got.loss, want.loss, tol * std::abs(want.loss)) << "chunk " << chunk;
        EXPECT_TRUE(all_close(got.dhidden, want.dhidden, tol, tol)) << "chunk " << chunk;
        EXPECT_TRUE(all_close(got.dweight, want.dweight, tol, tol)) << "chunk " << chunk;
      }
    }
  }
}

TEST(ChunkedCrossEntropy, GradcheckInFloat64) {
  Linear head(4, 6, false);
  head.to(kFloat64);
  const Tensor targets = from_vector(std::vector<int64_t>{1, -100, 5, 0, 2}, {5});
  GradcheckFn fn = [&](const std::vector<Tensor>& in) {
    head.weight = in[1];  // the head reads its weight member
    return chunked_cross_entropy(head, in[0], targets, 2);
  };
  assert_gradcheck(fn, {leaf(normal_tensor({5, 4}, 6)), leaf(normal_tensor({6, 4}, 7))});
}

TEST(ChunkedCrossEntropy, TheLogitsAreNeverWholeInMemory) {
  const int64_t N = 512, C = 32, V = 4000;
  auto peak = [&](int64_t chunk_rows) {
    manual_seed(1);
    Linear head(C, V, false);
    Tensor hidden = leaf(normal_tensor({N, C}, 8, kFloat32));
    const Tensor targets = some_targets(N, V, 0);
    reset_peak_memory_stats();
    const int64_t before = memory_stats().live_bytes;
    Tensor loss = chunk_rows > 0 ? chunked_cross_entropy(head, hidden, targets, chunk_rows)
                                 : cross_entropy(head.forward(hidden), targets);
    loss.backward();
    return memory_stats().peak_bytes - before;
  };
  const int64_t logits_bytes = N * V * 4;
  EXPECT_GT(peak(0), 2 * logits_bytes);           // logits and their gradient, at least
  EXPECT_LT(peak(64), logits_bytes / 2);          // a chunk's, and the weight's gradient
}

TEST(ChunkedCrossEntropy, BadArgumentsAreErrors) {
  Linear head(4, 6, false);
  const Tensor hidden = normal_tensor({3, 4}, 9, kFloat32);
  test::expect_error([&] { chunked_cross_entropy(head, hidden, some_targets(3, 6, 0), 0); }, {"chunk_rows must be positive"});
  test::expect_error([&] { chunked_cross_entropy(head, hidden, some_targets(2, 6, 0), 2); }, {"hidden (3,4)", "targets (2)"});
}

}  // namespace
}  // namespace tg::nn
