// train_gpt --precision bf16 (train/trainer.h): the forward under AutocastGuard(kBFloat16),
// so the matrix products of forward and backward take bfloat16 inputs. It trains the model
// float32 trains (the losses stay within a few percent, step by step) without being float32 (the
// rounding shows), keeps less memory, gives the same bits at any thread count and on the portable
// kernel, and the fast and reference paths agree to float rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/gemm.h"
#include "autograd/runtime/memory.h"
#include "autograd/runtime/parallel.h"
#include "train/corpus.h"
#include "train/trainer.h"
#include "test_util.h"

namespace tg {
namespace {

// The run's shape; `steps` of its 40-step schedule are trained.
train::TrainOptions options(const std::string& precision) {
  train::TrainOptions o;
  o.batch = 8;
  o.model.context_length = 32;
  o.model.emb_dim = 32;
  o.model.n_heads = 4;
  o.model.n_layers = 2;
  o.model.drop_rate = 0.0;
  o.steps = 40;
  o.warmup = 5;
  o.lr = 3e-3;
  o.eval_batches = 2;
  o.precision = precision;
  return o;
}

const std::string& text() {
  static const std::string t = train::builtin_corpus(30000, 7);
  return t;
}

std::vector<double> losses(const train::TrainOptions& o, int64_t steps = 40) {
  train::Trainer t(o, text());
  std::vector<double> out;
  for (int64_t s = 0; s < steps; ++s) out.push_back(t.train_step().loss);
  return out;
}

TEST(MixedPrecision, Bf16TrainsAsFloat32DoesWithoutBeingFloat32) {
  const std::vector<double> fp32 = losses(options("fp32")), bf16 = losses(options("bf16"));
  double worst = 0;
  for (size_t s = 0; s < fp32.size(); ++s) worst = std::max(worst, std::abs(bf16[s] - fp32[s]) / fp32[s]);
  EXPECT_LT(worst, 0.02) << "the largest relative difference of a step's loss";
  EXPECT_GT(worst, 1e-6) << "bf16 gave float32's losses: the products were not rounded";
  EXPECT_LT(bf16.back(), bf16.front() * 0.8) << "bf16 did not learn";
  std::cout << "  bf16 vs fp32 over 40 steps: worst relative loss difference " << worst << "\n";
}

TEST(MixedPrecision, FastAndReferencePathsAgree) {
  std::vector<double> fast, reference;
  {
    FastKernelsGuard on(true);
    fast = losses(options("bf16"), 10);
  }
  {
    FastKernelsGuard off(false);
    reference = losses(options("bf16"), 10);
  }
  for (size_t s = 0; s < fast.size(); ++s) EXPECT_NEAR(fast[s], reference[s], 1e-4 * reference[s]) << "step " << s + 1;
}

TEST(MixedPrecision, SameBitsAtAnyThreadCountAndOnThePortableKernel) {
  const int threads = get_num_threads();
  const kernels::bf16_gemm::Kernel kernel = kernels::bf16_kernel();
  std::vector<std::vector<double>> runs;
  for (const int n : {1, 2}) {
    set_num_threads(n);
    runs.push_back(losses(options("bf16"), 5));
  }
  kernels::set_bf16_kernel(kernels::bf16_gemm::Kernel::kFma);
  runs.push_back(losses(options("bf16"), 5));
  kernels::set_bf16_kernel(kernel);
  set_num_threads(threads);
  EXPECT_EQ(runs[0], runs[1]) << "1 vs 2 threads";
  EXPECT_EQ(runs[0], runs[2]) << "the best kernel vs the portable one";
}

// bf16 keeps the matrix products' inputs for backward at half the bytes. At this tiny size the
// float32 rest (the residual stream, the feed-forward's pre-activation, the logits, the parameters,
// their gradients and AdamW's state) is most of a step's memory: measured 0.84x of fp32. With the
// fast kernels off, the composed attention also keeps its (B, NH, T, T) weights in float32 for
// softmax's backward, most of the rest at T = 64: measured 0.96x.
TEST(MixedPrecision, Bf16KeepsLessMemory) {
  auto peak_of_a_step = [](const std::string& precision) {
    train::TrainOptions o = options(precision);
    o.batch = 16;
    o.model.context_length = 64;
    train::Trainer t(o, text());
    t.train_step();  // the optimizer's state is made
    reset_peak_memory_stats();
    t.train_step();
    return static_cast<double>(memory_stats().peak_bytes);
  };
  const double fp32 = peak_of_a_step("fp32"), bf16 = peak_of_a_step("bf16");
  const double bound = fast_kernels() ? 0.9 : 0.98;
  EXPECT_LT(bf16, bound * fp32) << "bf16 " << bf16 / (1 << 20) << " MB vs fp32 " << fp32 / (1 << 20) << " MB";
  std::cout << "  peak tensor memory of a step: bf16 " << bf16 / (1 << 20) << " MB, fp32 " << fp32 / (1 << 20)
            << " MB\n";
}

}  // namespace
}  // namespace tg
