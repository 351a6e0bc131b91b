// tests/autograd/test_matmul.cpp — tg::matmul's fast path (BLIS) against matmul_reference: every
// shape case PyTorch's matmul has (dot, mv, vector-matrix, mm, batched with broadcast batch
// dims), strided operands passed to BLIS without a copy, gradients by finite differences, the
// error messages; and the thread settings and parallel_for of autograd/runtime/parallel.h.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/fast_kernels.h"
#include "autograd/internal.h"
#include "autograd/kernels/gemm.h"
#include "autograd/ops/derivatives.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

using tg::test::normal_tensor;
using tg::test::leaf;

// Tolerances: |actual - expected| <= atol + rtol * |expected|. Float32 gemm sums in float32
// (in a blocked order), the oracle in double.
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance_for(ScalarType dtype) { return dtype == kFloat32 ? Tolerance{1e-5, 1e-4} : Tolerance{1e-12, 1e-12}; }

// Same shape and dtype, every element within tolerance; a failure names the index and values.
void expect_close(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  const Tolerance tol = tolerance_for(expected.dtype());
  const std::vector<double> a = actual.tolist<double>(), e = expected.tolist<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - e[i]);
    ASSERT_LE(err, tol.atol + tol.rtol * std::abs(e[i]))
        << "flat index " << i << ": got " << a[i] << ", expected " << e[i] << ", error " << err;
  }
}

// matmul's fast path and matmul_reference agree on a and b.
void expect_matches_reference(const Tensor& a, const Tensor& b) {
  SCOPED_TRACE(shape_str(a.sizes()) + " @ " + shape_str(b.sizes()) + " " + dtype_name(a.dtype()));
  FastKernelsGuard fast(true);
  expect_close(matmul(a, b), matmul_reference(a, b));
}

// A message check: fn throws an error whose text is exactly `message`.
template <class F>
void expect_error(F fn, const std::string& message) {
  EXPECT_EQ(tg::test::error_of(fn), message);
}

// One shape case: both operand shapes and the result shape PyTorch gives.
struct ShapeCase {
  Shape a, b, out;
};

// Every kind of operand pairing PyTorch's matmul distinguishes.
const std::vector<ShapeCase>& shape_cases() {
  static const std::vector<ShapeCase> cases = {
      {{3}, {3}, {}},                            // dot
      {{4, 3}, {3}, {4}},                        // matrix-vector
      {{3}, {3, 5}, {5}},                        // vector-matrix
      {{4, 3}, {3, 5}, {4, 5}},                  // matrix-matrix
      {{2, 4, 3}, {2, 3, 5}, {2, 4, 5}},         // batched, same batch
      {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},   // batch dims broadcast both ways
      {{2, 4, 3}, {3, 5}, {2, 4, 5}},            // batched @ matrix
      {{2, 4, 3}, {3}, {2, 4}},                  // batched @ vector
      {{3}, {2, 3, 5}, {2, 5}},                  // vector @ batched
      {{4, 3}, {2, 3, 5}, {2, 4, 5}},            // matrix @ batched
      {{1, 4, 3}, {2, 2, 3, 5}, {2, 2, 4, 5}},   // size-1 batch dim broadcast
  };
  return cases;
}

// --- forward against the oracle ------------------------------------------------------------------

TEST(Matmul, EveryShapeCaseMatchesReferenceF64) {
  uint32_t seed = 1;
  for (const ShapeCase& c : shape_cases()) {
    const Tensor a = normal_tensor(c.a, seed++, kFloat64), b = normal_tensor(c.b, seed++, kFloat64);
    EXPECT_EQ(matmul(a, b).sizes(), c.out) << shape_str(c.a) << " @ " << shape_str(c.b);
    expect_matches_reference(a, b);
  }
}

TEST(Matmul, EveryShapeCaseMatchesReferenceF32) {
  uint32_t seed = 100;
  for (const ShapeCase& c : shape_cases()) {
    const Tensor a = normal_tensor(c.a, seed++, kFloat32), b = normal_tensor(c.b, seed++, kFloat32);
    EXPECT_EQ(matmul(a, b).dtype(), kFloat32);
    expect_matches_reference(a, b);
  }
}

TEST(Matmul, WithFastKernelsOffTheForwardAndBackwardRunMatmulReference) {
  FastKernelsGuard plain(false);
  const Tensor a = leaf(normal_tensor({2, 5, 7}, 95, kFloat32)), b = leaf(normal_tensor({7, 3}, 96, kFloat32));
  const Tensor g = normal_tensor({2, 5, 3}, 97, kFloat32);
  const Tensor out = matmul(a, b);
  EXPECT_TRUE(test::all_close(out, matmul_reference(a, b), 0, 0));
  out.backward(g);
  EXPECT_TRUE(test::all_close(a.grad(), matmul_reference(g, b.detach().t()), 0, 0));  // da = g @ b^T
  // db: a product per batch, a_i^T @ g_i, summed over the batch by the tape (only the fast path
  // folds the batch into one product)
  EXPECT_TRUE(test::all_close(b.grad(), matmul_reference(a.detach().transpose(1, 2), g).sum(0), 0, 0));
}

TEST(Matmul, SmallIntegerValuesMatchTorchExactly) {
  // torch: a @ b, a @ v, w @ a, v @ u
  const Tensor a = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  const Tensor b = tensor({{1.0, 0.0}, {2.0, 1.0}, {0.0, -1.0}});
  EXPECT_EQ(matmul(a, b).tolist<float>(), (std::vector<float>{5, -1, 14, -1}));
  EXPECT_EQ(matmul(a, tensor({1.0, 2.0, 3.0})).tolist<float>(), (std::vector<float>{14, 32}));
  EXPECT_EQ(matmul(tensor({1.0, 2.0}), a).tolist<float>(), (std::vector<float>{9, 12, 15}));
  const Tensor dot = matmul(tensor({1.0, 2.0, 3.0}), tensor({4.0, 5.0, 6.0}));
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_EQ(dot.item<float>(), 32.0f);
}

TEST(Matmul, LargerThanOneBlisBlockMatchesReferenceF32) {
  // Sizes that are not multiples of BLIS's register blocks, with K large enough to accumulate.
  for (ScalarType dt : {kFloat32, kFloat64}) {
    expect_matches_reference(normal_tensor({67, 301}, 7, dt), normal_tensor({301, 45}, 8, dt));
  }
}

// A right operand stored by columns with few rows, as a LoRA's B^T (r, out): gemm copies it into
// row-major order before BLIS reads it (up to K = 64). Products big enough for BLIS, K on both
// sides of that bound, float32 and float64, a batch against one shared b, and b a slice of a
// larger weight's rows (a fused q, k, v adapter's third).
TEST(Matmul, ShortColumnStoredRightOperandsMatchReference) {
  uint32_t seed = 900;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t K : {1, 4, 8, 63, 64, 65, 128}) {
      const Tensor u = normal_tensor({1100, K}, seed++, dt), B = normal_tensor({300, K}, seed++, dt);
      expect_matches_reference(u, B.t());
      expect_matches_reference(u.view({2, 550, K}), B.t());
      const Tensor fused = normal_tensor({900, K}, seed++, dt);
      expect_matches_reference(u, fused.narrow(0, 300, 300).t());
    }
  }
}

// One row (M = 1) or one column (N = 1) goes to a matrix-vector product instead of gemm: odd and
// vector-length sizes, every layout a linear layer or attention hands it (transposed weights,
// strided rows and columns, per-head batches of views into a larger buffer), large values.
TEST(Matmul, OneRowAndOneColumnProductsMatchReference) {
  uint32_t seed = 300;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int64_t K : {1, 2, 7, 16, 17, 64, 385}) {
      for (int64_t N : {1, 3, 8, 15, 33, 129}) {
        const Tensor x = normal_tensor({1, K}, seed, dt), w = normal_tensor({N, K}, seed + 1, dt);
        expect_matches_reference(x, w.t());                  // a linear layer on one token: w read in place
        expect_matches_reference(w, x.t());                  // one column
        expect_matches_reference(x, normal_tensor({K, N}, seed + 2, dt));
        expect_matches_reference(normal_tensor({N, K}, seed + 3, dt), normal_tensor({K, 1}, seed + 4, dt));
        const Tensor big = normal_tensor({K + 2, N + 3}, seed + 5, dt);
        seed += 6;
        expect_matches_reference(big.select(1, 1).narrow(0, 0, K).unsqueeze(0), big.narrow(0, 1, K).narrow(1, 2, N));
        expect_matches_reference(big.narrow(0, 2, K).narrow(1, 0, N).t(), big.select(1, N + 2).narrow(0, 1, K));
        // large values: scaling by powers of two is exact, so the products near 2^100 (~1e30,
        // still finite in float32) are the small ones' times 2^100, bit for bit
        const double s = std::ldexp(1.0, 50);
        EXPECT_TRUE(test::all_close(matmul(x * s, (w * s).t()), matmul(x, w.t()) * (s * s), 0, 0)) << K << " " << N;
      }
    }
    // attention while generating: one query per head against T cached keys, then the values
    const Tensor cache = normal_tensor({2, 3, 12, 8}, seed++, dt);  // (b, h, context, hs)
    const Tensor keys = cache.narrow(2, 0, 5), q = normal_tensor({2, 3, 1, 8}, seed++, dt);
    expect_matches_reference(q, keys.transpose(2, 3));                                     // (2,3,1,5)
    expect_matches_reference(normal_tensor({2, 3, 1, 5}, seed++, dt), cache.narrow(2, 0, 5));  // (2,3,1,8)
    const Tensor token = normal_tensor({1, 1, 17}, seed++, dt), weight = normal_tensor({9, 17}, seed++, dt);
    const Tensor bias = normal_tensor({9}, seed++, dt);
    expect_close(linear(token, weight, bias), matmul_reference(token, weight.t()) + bias);
  }
}

TEST(Matmul, TransposedPermutedAndSlicedOperandsMatchReference) {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    const Tensor x = normal_tensor({5, 4}, 11, dt), w = normal_tensor({6, 4}, 12, dt);
    expect_matches_reference(x, w.t());                                    // (5,4) @ (4,6) column-major
    expect_matches_reference(w.t().t().t().t(), x.t());                    // both transposed
    // attention: q (B,NH,T,hs) made by permuting (B,T,NH,hs); scores = q @ k^T
    const Tensor q = normal_tensor({2, 5, 3, 4}, 13, dt).permute({0, 2, 1, 3});
    const Tensor k = normal_tensor({2, 5, 3, 4}, 14, dt).permute({0, 2, 1, 3});
    expect_matches_reference(q, k.transpose(-2, -1));
    // slices: every other column (rows and columns interleave), an offset window, a row step
    const Tensor big = normal_tensor({8, 10}, 15, dt);
    expect_matches_reference(big.slice(1, 0, std::nullopt, 2), normal_tensor({5, 3}, 16, dt));  // (8,5) step 2
    expect_matches_reference(big.narrow(0, 2, 3).narrow(1, 1, 7), normal_tensor({7, 2}, 17, dt));
    expect_matches_reference(normal_tensor({2, 8}, 18, dt), big.narrow(1, 3, 4));
    expect_matches_reference(big.slice(0, 1, std::nullopt, 3), big.t().narrow(1, 0, 3));  // (3,10) @ (10,3)
    // strided vectors (stride 10): a dot of two columns, a matrix times a column, a column times a matrix
    expect_matches_reference(big.select(1, 2), big.select(1, 5));
    expect_matches_reference(big.t(), big.select(1, 3));
    expect_matches_reference(big.select(1, 4), big.narrow(1, 0, 6));
  }
}

TEST(Matmul, ExpandedOperandsMatchReference) {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    // stride 0 inside the matrix (BLIS cannot read it: copied) and along a batch dim (reused)
    const Tensor row = normal_tensor({1, 4}, 21, dt);
    expect_matches_reference(row.expand({3, 4}), normal_tensor({4, 2}, 22, dt));
    expect_matches_reference(normal_tensor({3, 4}, 23, dt), normal_tensor({4, 1}, 24, dt).expand({4, 5}));
    const Tensor m = normal_tensor({3, 4}, 25, dt);
    expect_matches_reference(m.expand({6, 3, 4}), normal_tensor({6, 4, 2}, 26, dt));
  }
}

TEST(Matmul, BroadcastBatchDimsMatchReference) {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    expect_matches_reference(normal_tensor({2, 1, 3, 4}, 31, dt), normal_tensor({5, 4, 2}, 32, dt));
    expect_matches_reference(normal_tensor({1, 3, 3, 4}, 33, dt), normal_tensor({2, 1, 4, 2}, 34, dt));
    expect_matches_reference(normal_tensor({3, 1, 2, 4}, 35, dt).transpose(0, 1), normal_tensor({4, 2}, 36, dt));
  }
}

TEST(Matmul, EmptyInnerDimGivesZeros) {
  const Tensor out = matmul(zeros({2, 0}), zeros({0, 3}));
  EXPECT_EQ(out.sizes(), (Shape{2, 3}));
  EXPECT_EQ(out.tolist<float>(), std::vector<float>(6, 0.0f));
  const Tensor dot = matmul(zeros({0}, kFloat64), zeros({0}, kFloat64));
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_EQ(dot.item(), 0.0);
  EXPECT_EQ(matmul(zeros({4, 2, 0}), zeros({0, 3})).tolist<float>(), std::vector<float>(24, 0.0f));
}

TEST(Matmul, EmptyOuterAndBatchDimsGiveEmptyResults) {
  EXPECT_EQ(matmul(zeros({0, 3}), zeros({3, 4})).sizes(), (Shape{0, 4}));
  EXPECT_EQ(matmul(zeros({2, 3}), zeros({3, 0})).sizes(), (Shape{2, 0}));
  EXPECT_EQ(matmul(zeros({0, 2, 3}), zeros({3, 4})).sizes(), (Shape{0, 2, 4}));
  EXPECT_EQ(matmul(zeros({0, 1, 2, 3}), zeros({5, 3, 4})).sizes(), (Shape{0, 5, 2, 4}));
}

// --- the fast path hands BLIS views as they are -----------------------------------------------------------------

TEST(Matmul, TransposedOperandIsPassedToBlisWithoutACopy) {
  FastKernelsGuard fast(true);  // the BLIS calls of the fast path
  // K = 96: a column-major b of at most 64 rows is copied for BLIS (gemm.cpp), this one is not
  const Tensor x = normal_tensor({64, 96}, 41, kFloat32);
  const Tensor w = normal_tensor({48, 96}, 42, kFloat32);
  matmul(x, w.t());  // (64,96) @ (96,48): w read column-major
  const kernels::GemmCall& call = kernels::last_gemm_call();
  EXPECT_EQ(call.a, x.data_ptr<float>());
  EXPECT_EQ(call.b, w.data_ptr<float>());
  EXPECT_EQ(call.rsb, 1);
  EXPECT_EQ(call.csb, 96);
  EXPECT_EQ(call.m * 10000 + call.n * 100 + call.k, 64 * 10000 + 48 * 100 + 96);
}

TEST(Matmul, AttentionScoresReadQAndKInPlace) {
  FastKernelsGuard fast(true);  // the BLIS calls of the fast path
  // q, k (B,NH,T,hs) as views of (B,T,NH,hs); the last gemm is batch (1,1). hs = 72: k^T is a
  // column-major b of hs rows, and one of at most 64 is copied for BLIS (gemm.cpp)
  const Tensor q = normal_tensor({2, 6, 2, 72}, 43, kFloat32).permute({0, 2, 1, 3});
  const Tensor k = normal_tensor({2, 6, 2, 72}, 44, kFloat32).permute({0, 2, 1, 3});
  matmul(q, k.transpose(-2, -1));
  const kernels::GemmCall& call = kernels::last_gemm_call();
  EXPECT_EQ(call.a, q.select(0, 1).select(0, 1).data_ptr<float>());
  EXPECT_EQ(call.b, k.select(0, 1).select(0, 1).data_ptr<float>());
  EXPECT_EQ(call.rsa, 144);  // T steps over NH*hs
  EXPECT_EQ(call.csb, 144);
}

TEST(Matmul, BroadcastBatchReusesTheSameMatrixPointer) {
  FastKernelsGuard fast(true);  // the BLIS calls of the fast path
  const Tensor w = normal_tensor({4, 2}, 45, kFloat32);
  matmul(normal_tensor({3, 5, 4}, 46, kFloat32), w.expand({3, 4, 2}));
  EXPECT_EQ(kernels::last_gemm_call().b, w.data_ptr<float>());
}

TEST(Matmul, OnlyLayoutsBlisRejectsAreCopied) {
  FastKernelsGuard fast(true);  // the BLIS calls of the fast path
  const Tensor row = normal_tensor({1, 10}, 47, kFloat32);
  const Tensor broadcast_rows = row.expand({8, 10});  // strides (0,1): BLIS refuses stride 0
  matmul(broadcast_rows, normal_tensor({10, 3}, 48, kFloat32));
  EXPECT_NE(kernels::last_gemm_call().a, broadcast_rows.data_ptr<float>());
  // Everything views of a dense tensor give is read in place:
  const Tensor big = normal_tensor({8, 10}, 49, kFloat32);
  const std::vector<Tensor> in_place = {
      big.slice(1, 0, std::nullopt, 2),                    // (8,5) strides (10,2): general stride
      big.slice(0, 0, std::nullopt, 2),                    // (4,10) strides (20,1)
      big.t().slice(1, 0, std::nullopt, 3),                // (10,3) strides (1,30)
      big.narrow(1, 3, 1),                                 // (8,1) one column
      normal_tensor({10}, 50, kFloat32).expand({1, 10}),   // (1,10) strides (0,1): the 0 is never stepped
  };
  for (const Tensor& a : in_place) {
    matmul(a, normal_tensor({a.size(1), 3}, 51, kFloat32));
    EXPECT_EQ(kernels::last_gemm_call().a, a.data_ptr<float>())
        << shape_str(a.sizes()) << " strides " << shape_str(a.strides());
  }
}

TEST(Matmul, BatchTimesSharedMatrixIsOneGemmWhenRowsFold) {
  FastKernelsGuard fast(true);  // the BLIS calls of the fast path
  const Tensor w = normal_tensor({4, 2}, 52, kFloat32);
  matmul(normal_tensor({3, 5, 4}, 53, kFloat32), w);  // (3,5,4) folds to (15,4)
  EXPECT_EQ(kernels::last_gemm_call().m, 15);
  matmul(normal_tensor({5, 3, 4}, 54, kFloat32).transpose(0, 1), w);  // rows do not fold: 3 gemms of 5
  EXPECT_EQ(kernels::last_gemm_call().m, 5);
  for (ScalarType dt : {kFloat32, kFloat64}) {
    expect_matches_reference(normal_tensor({2, 3, 5, 4}, 55, dt), normal_tensor({4, 2}, 56, dt));
    expect_matches_reference(normal_tensor({2, 3, 5, 4}, 57, dt).narrow(2, 1, 3), normal_tensor({4}, 58, dt));
  }
}

// --- the tape ------------------------------------------------------------------------------------

TEST(Matmul, NodeNamesAreTorchs) {
  struct NameCase {
    Shape a, b;
    const char* name;
  };
  // torch 1.13: (a @ b).grad_fn.name()
  const std::vector<NameCase> cases = {
      {{3}, {3}, "DotBackward0"},           {{4, 3}, {3}, "MvBackward0"},
      {{3}, {3, 5}, "SqueezeBackward3"},    {{4, 3}, {3, 5}, "MmBackward0"},
      {{2, 4, 3}, {2, 3, 5}, "UnsafeViewBackward0"}, {{2, 4, 3}, {3, 5}, "UnsafeViewBackward0"},
      {{2, 4, 3}, {3}, "UnsafeViewBackward0"},       {{3}, {2, 3, 5}, "UnsafeViewBackward0"},
      {{4, 3}, {2, 3, 5}, "CloneBackward0"},         {{4, 3}, {2, 2, 3, 5}, "CloneBackward0"},
      {{2, 1, 3, 4}, {5, 4, 2}, "UnsafeViewBackward0"},
  };
  for (const NameCase& c : cases) {
    const Tensor out = matmul(leaf(normal_tensor(c.a, 1, kFloat64)), leaf(normal_tensor(c.b, 2, kFloat64)));
    ASSERT_TRUE(out.grad_fn());
    EXPECT_EQ(out.grad_fn()->name, c.name) << shape_str(c.a) << " @ " << shape_str(c.b);
  }
  // a 3-d b stored transposed goes through bmm there: (4,3) @ (2,5,3).mT
  const Tensor bt = leaf(normal_tensor({2, 5, 3}, 3, kFloat64)).transpose(-2, -1);
  EXPECT_EQ(matmul(leaf(normal_tensor({4, 3}, 4, kFloat64)), bt).grad_fn()->name, "UnsafeViewBackward0");
}

TEST(Matmul, SavesOnlyTheOperandTheOtherGradientNeeds) {
  const Tensor a = normal_tensor({4, 3}, 51, kFloat64), b = normal_tensor({3, 5}, 52, kFloat64);
  const Tensor only_a = matmul(leaf(a), b);
  ASSERT_EQ(only_a.grad_fn()->saved.size(), 2u);
  EXPECT_FALSE(only_a.grad_fn()->saved[0].data.defined());  // a not needed for da
  EXPECT_TRUE(only_a.grad_fn()->saved[1].data.defined());
  const Tensor only_b = matmul(a, leaf(b));
  EXPECT_TRUE(only_b.grad_fn()->saved[0].data.defined());
  EXPECT_FALSE(only_b.grad_fn()->saved[1].data.defined());
  NoGradGuard no_grad;
  EXPECT_FALSE(matmul(leaf(a), leaf(b)).grad_fn());
}

// --- gradients -----------------------------------------------------------------------------------

GradcheckFn matmul_fn() {
  return [](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); };
}

TEST(Matmul, BackwardMatchesFiniteDifferencesForEveryShapeCaseF64) {
  uint32_t seed = 200;
  for (const ShapeCase& c : shape_cases()) {
    SCOPED_TRACE(shape_str(c.a) + " @ " + shape_str(c.b));
    const Tensor a = leaf(normal_tensor(c.a, seed++, kFloat64)), b = leaf(normal_tensor(c.b, seed++, kFloat64));
    const GradcheckResult r = gradcheck(matmul_fn(), {a, b});
    EXPECT_TRUE(r.passed) << r;
  }
}

TEST(Matmul, BackwardMatchesFiniteDifferencesOnStridedOperandsF64) {
  const Tensor big = leaf(normal_tensor({6, 8}, 61, kFloat64));
  const Tensor bigger = leaf(normal_tensor({2, 5, 3, 4}, 62, kFloat64));
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {big.t(), leaf(normal_tensor({6, 3}, 63, kFloat64))},                            // transposed
      {big.slice(1, 0, std::nullopt, 2), leaf(normal_tensor({4, 2}, 64, kFloat64))},   // copied layout
      {bigger.permute({0, 2, 1, 3}), bigger.permute({0, 2, 3, 1}).narrow(3, 0, 4)},   // q @ k^T-like
      {bigger.permute({0, 2, 1, 3}), leaf(normal_tensor({4, 3}, 65, kFloat64))},       // unfoldable a
  };
  for (const auto& [a, b] : pairs) {
    SCOPED_TRACE(shape_str(a.sizes()) + " @ " + shape_str(b.sizes()));
    EXPECT_TRUE(gradcheck(matmul_fn(), {a, b}).passed);
  }
}

TEST(Matmul, BackwardMatchesFiniteDifferencesOnFuzzedShapesAndLayoutsF64) {
  GradcheckOptions options;
  options.fuzz = 10;
  uint32_t seed = 300;
  for (const ShapeCase& c : shape_cases()) {
    SCOPED_TRACE(shape_str(c.a) + " @ " + shape_str(c.b));
    const Tensor a = leaf(normal_tensor(c.a, seed++, kFloat64)), b = leaf(normal_tensor(c.b, seed++, kFloat64));
    const GradcheckResult r = gradcheck(matmul_fn(), {a, b}, options);
    EXPECT_TRUE(r.passed) << r;
  }
}

TEST(Matmul, BroadcastBatchGradientsAreSummedToTheInputShapes) {
  FastKernelsGuard fast(true);
  // (2,1,3,4) @ (5,4,2): da sums over the 5 batches of b, db over the 2 of a.
  const Tensor a = leaf(normal_tensor({2, 1, 3, 4}, 71, kFloat64)), b = leaf(normal_tensor({5, 4, 2}, 72, kFloat64));
  matmul(a, b).sum().backward();
  ASSERT_EQ(a.grad().sizes(), a.sizes());
  ASSERT_EQ(b.grad().sizes(), b.sizes());
  // with g = ones: da[i,0,m,k] = sum_j sum_n b[j,k,n];  db[j,k,n] = sum_i sum_m a[i,0,m,k]
  const Tensor ones_g = ones({2, 5, 3, 2}, kFloat64);
  expect_close(a.grad(), sum(matmul_reference(ones_g, b.detach().transpose(-2, -1)), 1, true));
  expect_close(b.grad(), sum(matmul_reference(a.detach().transpose(-2, -1), ones_g), 0, false));
}

TEST(Matmul, GradientOfAFloat32MatmulMatchesReference) {
  FastKernelsGuard fast(true);
  const Tensor a = leaf(normal_tensor({3, 7, 5}, 81, kFloat32)), b = leaf(normal_tensor({5, 4}, 82, kFloat32));
  const Tensor g = normal_tensor({3, 7, 4}, 83, kFloat32);
  matmul(a, b).backward(g);
  expect_close(a.grad(), matmul_reference(g, b.detach().t()));
  expect_close(b.grad(), sum(matmul_reference(a.detach().transpose(-2, -1), g), 0, false));
}

// --- errors --------------------------------------------------------------------------------------

TEST(Matmul, MismatchedMatricesNameBothShapes) {
  expect_error([] { matmul(zeros({6, 3}), zeros({2, 3})); },
               "matmul: mat1 and mat2 shapes cannot be multiplied (6x3 and 2x3)");
  expect_error([] { matmul(zeros({3}), zeros({4, 2})); },
               "matmul: mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)");
  expect_error([] { matmul(zeros({2, 2, 3}), zeros({2, 4, 5})); },
               "matmul: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5) for inputs of shape (2,2,3) "
               "and (2,4,5)");
}

TEST(Matmul, MismatchedVectorsNameBothSizes) {
  expect_error([] { matmul(zeros({3}), zeros({4})); },
               "matmul: inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
               "elements, but got 3 and 4 elements respectively");
  expect_error([] { matmul(zeros({2, 3}), zeros({4})); },
               "matmul: size mismatch, got input (2), mat (2x3), vec (4)");
}

TEST(Matmul, UnbroadcastableBatchDimsNameBothShapes) {
  expect_error([] { matmul(zeros({2, 4, 3}), zeros({3, 3, 5})); },
               "matmul: batch dims of shapes (2,4,3) and (3,3,5) cannot be broadcast (batch dim 0: 2 vs 3)");
}

TEST(Matmul, ZeroDimInputsAreRejected) {
  expect_error([] { matmul(zeros({}), zeros({2, 3})); },
               "matmul: both arguments to matmul need to be at least 1D, but they are 0D and 2D");
  expect_error([] { matmul(zeros({3}), zeros({})); },
               "matmul: both arguments to matmul need to be at least 1D, but they are 1D and 0D");
}

TEST(Matmul, DtypesMustMatchAndNotBeBool) {
  expect_error([] { matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)); },
               "matmul: expected both operands to have the same dtype, got float32 and float64; convert one of them, "
               "e.g. with .to_float()");
  expect_error([] { matmul(zeros({2, 3}, kInt64), zeros({3, 2})); },
               "matmul: expected both operands to have the same dtype, got int64 and float32; convert one of them, "
               "e.g. with .to_float()");
  expect_error([] { matmul(tensor({true, false, true}), tensor({true, false, true})); },
               "matmul: not supported for bool tensors; convert them, e.g. with .to_float()");
}

// As torch on CPU: int64 @ int64 is int64 (exact, wrapping on overflow).
TEST(Matmul, Int64OperandsGiveExactInt64Products) {
  Tensor a = tensor({{1, 2}, {3, 4}}), b = tensor({{5, 6}, {7, 8}});
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(c.tolist<int64_t>(), (std::vector<int64_t>{19, 22, 43, 50}));
  EXPECT_EQ(matmul(tensor({1, 2}), b).tolist<int64_t>(), (std::vector<int64_t>{19, 22}));
  Tensor big = tensor({int64_t{1} << 53, 1});
  EXPECT_EQ(matmul(big, tensor({3, 1})).item<int64_t>(), (int64_t{3} << 53) + 1);  // exact past 2^53
  EXPECT_EQ(matmul(a.expand({3, 2, 2}), b.t()).sizes(), (Shape{3, 2, 2}));
}

// --- threads -------------------------------------------------------------------------------------

TEST(MatmulThreads, DefaultIsOnePerCoreAndSetIsRemembered) {
  const test::ThreadCountGuard guard;
  EXPECT_GE(get_num_threads(), 1);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  expect_error([] { set_num_threads(0); }, "set_num_threads: expected a positive number of threads, got 0");
}

TEST(MatmulThreads, ResultIsTheSameOnOneThreadAndMany) {
  const test::ThreadCountGuard guard;
  const Tensor a = normal_tensor({300, 200}, 91, kFloat64), b = normal_tensor({200, 250}, 92, kFloat64);
  set_num_threads(1);
  const Tensor one = matmul(a, b);
  set_num_threads(4);
  expect_close(matmul(a, b), one);
}

// Matrix-vector products (kernels/gemv.h, or BLIS's gemv): the same bits on any thread count.
TEST(MatmulThreads, OneRowAndOneColumnProductsAreTheSameBitsOnAnyThreadCount) {
  const test::ThreadCountGuard guard;
  const Tensor x = normal_tensor({1, 385}, 93, kFloat32), w = normal_tensor({1037, 385}, 94, kFloat32);
  set_num_threads(1);
  const Tensor row = matmul(x, w.t()), column = matmul(w, x.t());  // (1,1037), (1037,1)
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    EXPECT_TRUE(test::all_close(matmul(x, w.t()), row, 0, 0)) << threads << " threads";
    EXPECT_TRUE(test::all_close(matmul(w, x.t()), column, 0, 0)) << threads << " threads";
  }
}

TEST(MatmulThreads, ParallelForCoversTheRangeOnceInGrainSizedChunks) {
  const test::ThreadCountGuard guard;
  set_num_threads(4);
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<int> chunks{0};
  parallel_for(0, 1000, 100, [&](int64_t lo, int64_t hi) {
    EXPECT_GE(hi - lo, 100);
    chunks++;
    for (int64_t i = lo; i < hi; ++i) hits[static_cast<size_t>(i)]++;
  });
  EXPECT_EQ(chunks.load(), 4);
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(MatmulThreads, ParallelForRunsSmallRangesAndNestedCallsInline) {
  const test::ThreadCountGuard guard;
  set_num_threads(4);
  int calls = 0;  // not atomic: inline calls happen on this thread only
  parallel_for(5, 50, 100, [&](int64_t lo, int64_t hi) {
    EXPECT_EQ(lo, 5);
    EXPECT_EQ(hi, 50);
    calls++;
  });
  EXPECT_EQ(calls, 1);
  parallel_for(0, 0, 1, [&](int64_t, int64_t) { calls++; });
  EXPECT_EQ(calls, 1);
  std::atomic<int> inner{0};
  parallel_for(0, 8, 1, [&](int64_t, int64_t) {
    parallel_for(0, 100, 1, [&](int64_t lo, int64_t hi) { inner += static_cast<int>(hi - lo); });
  });
  EXPECT_EQ(inner.load(), 4 * 100);
}

TEST(MatmulThreads, ParallelForRethrowsAWorkersException) {
  const test::ThreadCountGuard guard;
  set_num_threads(4);
  EXPECT_THROW(parallel_for(0, 400, 100,
                            [](int64_t lo, int64_t) {
                              if (lo >= 300) throw std::runtime_error("chunk " + std::to_string(lo));
                            }),
               std::runtime_error);
  // and the pool still works afterwards
  std::atomic<int64_t> total{0};
  parallel_for(0, 400, 100, [&](int64_t lo, int64_t hi) { total += hi - lo; });
  EXPECT_EQ(total.load(), 400);
}

// Loops back to back (the pool's workers still spinning), after a pause (asleep), and from three
// application threads at once: every chunk runs once, in every loop.
TEST(MatmulThreads, ParallelForRunsEveryChunkOnceAcrossSpinningSleepingAndConcurrentCallers) {
  const test::ThreadCountGuard guard;
  set_num_threads(3);
  auto loops = [](int count, int pause_every) {
    for (int loop = 0; loop < count; ++loop) {
      if (pause_every > 0 && loop % pause_every == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::vector<std::atomic<int>> hits(97);
      parallel_for(0, 97, 10, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (size_t i = 0; i < hits.size(); ++i)
        if (hits[i].load() != 1) return ::testing::AssertionFailure() << "loop " << loop << ", index " << i;
    }
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(loops(2000, 0));
  EXPECT_TRUE(loops(50, 1));
  std::vector<::testing::AssertionResult> results(3, ::testing::AssertionSuccess());
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) callers.emplace_back([&, c] { results[static_cast<size_t>(c)] = loops(300, 7); });
  for (std::thread& t : callers) t.join();
  for (const auto& r : results) EXPECT_TRUE(r);
}

// matmul_into (autograd/internal.h): a product written into a block of a larger buffer gives
// matmul's bits there (the same kernel, under autocast too, gemv for one row or column, the plain
// path with the fast kernels off), and leaves the rest of the buffer as it was.
TEST(MatmulInto, ABlockOfABufferGetsMatmulsBitsAndNothingElseChanges) {
  struct Shape3 {
    int64_t M, N, K;
  };
  const std::vector<Shape3> shapes = {{5, 7, 3}, {1, 9, 4}, {6, 1, 5}, {4, 3, 0}, {40, 70, 33}, {130, 96, 64}};
  for (bool fast : {true, false}) {
    FastKernelsGuard mode(fast);
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      for (bool autocast : {false, true}) {
        if (autocast && dtype != kFloat32) continue;
        for (const Shape3& s : shapes) {
          AutocastGuard guard(autocast ? kBFloat16 : kFloat32);
          const std::string what = std::string(fast ? "fast " : "reference ") + dtype_name(dtype) +
                                   (autocast ? " autocast " : " ") + std::to_string(s.M) + "x" + std::to_string(s.N) +
                                   "x" + std::to_string(s.K);
          const Tensor a = normal_tensor({s.M, s.K}, 1, dtype);
          const Tensor b = normal_tensor({s.N, s.K}, 2, dtype).t();  // a transposed operand, as attention's k^T
          Tensor buffer = full({s.M + 3, s.N + 5}, 7.0, dtype);   // the product goes to rows 2.., cols 3..
          const Tensor block = buffer.narrow(0, 2, s.M).narrow(1, 3, s.N);
          matmul_into(block, a, b);
          EXPECT_TRUE(test::same_bytes(block, matmul(a, b))) << what;
          Tensor untouched = full({s.M + 3, s.N + 5}, 7.0, dtype);
          untouched.narrow(0, 2, s.M).narrow(1, 3, s.N).copy_(block);
          EXPECT_TRUE(test::same_bytes(buffer, untouched)) << what;
        }
      }
    }
  }
  const Tensor a = ones({2, 3}), b = ones({3, 4});
  EXPECT_TRUE(test::has_part(test::error_of([&] { matmul_into(zeros({2, 5}), a, b); }),
                             "matmul_into: expected dst (M, N) with contiguous rows"));
  EXPECT_TRUE(test::has_part(test::error_of([&] { matmul_into(zeros({4, 2}).t(), a, b); }), "got dst (2,4)"));
  EXPECT_TRUE(test::has_part(test::error_of([&] { matmul_into(zeros({2, 4}, kFloat64), a, b); }), "float64"));
}

}  // namespace
}  // namespace tg
