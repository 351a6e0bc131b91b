// tests/autograd/test_bf16_weights.cpp — a frozen bfloat16 weight times float32 activations
// (ops/matmul.cpp: widens_16bit), as a checkpoint's 16-bit weights are used without a float32 copy:
//   * matmul and linear give, to the bit, what the same weight widened to float32 gives: for every
//     kernel gemm.h picks (a token's row kernel, the several-vectors kernel, small_gemm's bands,
//     BLIS's whole copy), both orientations of the weight, batched activations, at 1 thread (one
//     shape of each kernel at 2 and 7), and on the plain path;
//   * the gradient reaching the activations is the float32 weight's, to the bit;
//   * gemv.h's kernel over bfloat16 rows gives the bits of its float32 copy, on every instruction
//     set this CPU has;
//   * embedding's rows of a bfloat16 table are its float32 rows;
//   * a bfloat16 weight that requires grad, and two bfloat16 operands, are Errors that say so;
//   * a float16 weight (an F16 checkpoint's) gives the same: its widened float32 copy's bits on one
//     shape of each kernel and on every instruction set, in the gradient and in embedding.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/gemv.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "autograd/runtime/parallel.h"
#include "test_util.h"

namespace {

using namespace tg;
using test::expect_error;
using test::normal_tensor;
using test::same_bytes;

// A (rows, cols) weight of bfloat16 values: normal draws rounded.
Tensor bf16_weight(int64_t rows, int64_t cols, uint64_t seed) {
  return normal_tensor({rows, cols}, seed, kFloat32).to(kBFloat16);
}

// Restores the thread count a test changed.
struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

struct Product {
  int64_t M, N, K;
};

// Shapes that reach each of gemm.h's kernels for x (M, K) @ w^T, w (N, K): one row (M = 1), a
// few rows times a weight of 1 MiB or more (N * K * 4 >= 2^20), small_gemm's sizes, and products
// past small_gemm's (BLIS), with K above and below small_gemm's 256 and N not a multiple of 32.
const std::vector<Product> kProducts = {
    {1, 7, 5},      {1, 300, 130},   {1, 2048, 130},  {2, 2048, 128}, {4, 4096, 96}, {3, 100, 40},
    {5, 77, 33},    {8, 2050, 128},  {64, 96, 300},   {7, 1, 50},     {1, 1, 9},     {300, 333, 257},
    {129, 520, 600}, {40, 3000, 200}, {6, 4100, 1030}, {3, 5, 0}, {600, 130, 520}, {520, 64, 40},
};
// One of each kernel, for 2 and 7 threads: how the work is split is the kernel's, not the shape's.
const std::vector<Product> kThreadedProducts = {
    {1, 2048, 130}, {2, 2048, 128}, {4, 4096, 96}, {64, 96, 300}, {300, 333, 257}, {600, 130, 520}, {3, 5, 0},
};

TEST(Bf16Weights, LinearIsTheWidenedWeightsProductToTheBit) {
  ThreadsGuard threads;
  for (const int n : {1, 2, 7}) {
    set_num_threads(n);
    for (const Product& p : n == 1 ? kProducts : kThreadedProducts) {
      const Tensor x = normal_tensor({p.M, p.K}, 100 + p.M, kFloat32);
      const Tensor w16 = bf16_weight(p.N, p.K, 200 + p.N);
      const Tensor w32 = w16.to(kFloat32);
      const Tensor bias = normal_tensor({p.N}, 300, kFloat32);
      SCOPED_TRACE("threads " + std::to_string(n) + ", x (" + std::to_string(p.M) + ", " + std::to_string(p.K) +
                   ") @ w^T, w (" + std::to_string(p.N) + ", " + std::to_string(p.K) + ")");
      EXPECT_TRUE(same_bytes(linear(x, w16), linear(x, w32)));
      EXPECT_TRUE(same_bytes(linear(x, w16, bias), linear(x, w32, bias)));
      // the weight stored (K, N), read by rows: x @ w
      const Tensor wt16 = bf16_weight(p.K, p.N, 400 + p.N);
      EXPECT_TRUE(same_bytes(matmul(x, wt16), matmul(x, wt16.to(kFloat32))));
      // the 16-bit operand on the left: w (N, K) @ x^T
      EXPECT_TRUE(same_bytes(matmul(w16, x.t()), matmul(w32, x.t())));
    }
  }
}

// got and want, two float32 products a @ b of the same K terms summed in other orders, each within
// K 2^-24 sum_k |a_ik b_kj| of the exact sum: so they differ by at most twice that, element by element.
::testing::AssertionResult within_rounding(const Tensor& got, const Tensor& want, const Tensor& a, const Tensor& b) {
  const int64_t K = a.size(-1);
  const Tensor bound = matmul(a.abs().to(kFloat64), b.abs().to(kFloat64)) * (2.0 * static_cast<double>(K) * 0x1p-24);
  const std::vector<double> g = got.tolist<double>(), w = want.tolist<double>(), e = bound.tolist<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(g[i] - w[i]) <= e[i])) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i] << " (|diff| "
                                           << std::abs(g[i] - w[i]) << " > " << e[i] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// Past 32 MiB widened, a product BLIS runs is widened and multiplied in bands of columns
// (gemm.cpp: kWidenedWholeBytes): the whole call's sums up to BLIS's kernel for a narrower shape,
// which may block K otherwise (BLIS's haswell kernels do), so within float32's rounding of the sum.
TEST(Bf16Weights, AWeightOfOver32MiBIsMultipliedInBandsWithinRounding) {
  // M * K past 2^18 in both products, so that small_gemm leaves them to BLIS (small_gemm.cpp: worth_it)
  const Tensor x = normal_tensor({100, 3200}, 21, kFloat32);
  const Tensor w16 = bf16_weight(2800, 3200, 22);  // 35.8 MB as float32
  const Tensor w32 = w16.to(kFloat32);
  EXPECT_TRUE(within_rounding(linear(x, w16), linear(x, w32), x, w32.t()));
  const Tensor g = normal_tensor({100, 2800}, 23, kFloat32);  // the activations' gradient: g @ w, K = 2800
  EXPECT_TRUE(within_rounding(matmul(g, w16), matmul(g, w32), g, w32));
}

TEST(Bf16Weights, BatchedActivationsAndThePlainPath) {
  const Tensor x = normal_tensor({3, 5, 64}, 1, kFloat32);
  const Tensor w16 = bf16_weight(48, 64, 2);
  EXPECT_TRUE(same_bytes(linear(x, w16), linear(x, w16.to(kFloat32))));
  // a weight per batch (batch dims on both sides), and a broadcast one
  const Tensor wb16 = normal_tensor({3, 64, 20}, 3, kFloat32).to(kBFloat16);
  EXPECT_TRUE(same_bytes(matmul(x, wb16), matmul(x, wb16.to(kFloat32))));
  EXPECT_TRUE(same_bytes(matmul(x, wb16.narrow(0, 0, 1).expand({3, 64, 20})),
                         matmul(x, wb16.narrow(0, 0, 1).to(kFloat32).expand({3, 64, 20}))));
  const FastKernelsGuard plain(false);
  EXPECT_TRUE(same_bytes(linear(x, w16), linear(x, w16.to(kFloat32))));
}

TEST(Bf16Weights, TheActivationsGradientIsTheFloat32WeightsToTheBit) {
  for (const Product& p : std::vector<Product>{{1, 300, 130}, {4, 4096, 96}, {64, 96, 300}, {300, 333, 257}}) {
    const Tensor w16 = bf16_weight(p.N, p.K, 7);
    const Tensor w32 = w16.to(kFloat32);
    const Tensor g = normal_tensor({p.M, p.N}, 8, kFloat32);
    const Tensor x16 = normal_tensor({p.M, p.K}, 9, kFloat32).requires_grad_(true);
    const Tensor x32 = x16.detach().clone().requires_grad_(true);
    (linear(x16, w16) * g).sum().backward();
    (linear(x32, w32) * g).sum().backward();
    EXPECT_TRUE(same_bytes(x16.grad(), x32.grad())) << p.M << " " << p.N << " " << p.K;
  }
}

// gemv.h's row kernel over a 16-bit weight w16 (M, K) (W: BFloat16 or Float16) gives the bits of its
// float32 copy, for one vector and for the 4 of x (4, K), on every instruction set this CPU has.
template <class W>
void expect_row_kernel_gives_the_float32_bits(const Tensor& w16, const Tensor& x) {
  const int64_t M = w16.size(0), K = w16.size(1);
  const Tensor w32 = w16.to(kFloat32);
  for (const kernels::Isa isa : {kernels::Isa::kPortable, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
    if (!kernels::isa_available(isa)) continue;
    std::vector<float> y16(4 * M), y32(4 * M);
    gemv::sgemv_rows(y16.data(), 1, w16.data_ptr<W>(), K, x.data_ptr<float>(), M, K, isa);
    gemv::sgemv_rows(y32.data(), 1, w32.data_ptr<float>(), K, x.data_ptr<float>(), M, K, isa);
    EXPECT_EQ(y16, y32) << kernels::isa_name(isa);
    gemv::sgemv_rows_many(y16.data(), M, 1, w16.data_ptr<W>(), K, x.data_ptr<float>(), K, 4, M, K, isa);
    gemv::sgemv_rows_many(y32.data(), M, 1, w32.data_ptr<float>(), K, x.data_ptr<float>(), K, 4, M, K, isa);
    EXPECT_EQ(y16, y32) << kernels::isa_name(isa);
  }
}

TEST(Bf16Weights, TheRowKernelWidensToTheFloat32Bits) {
  const int64_t M = 37, K = 1000;
  expect_row_kernel_gives_the_float32_bits<BFloat16>(bf16_weight(M, K, 11), normal_tensor({4, K}, 12, kFloat32));
}

TEST(Bf16Weights, EmbeddingRowsAreTheFloat32Rows) {
  const Tensor table = bf16_weight(50, 24, 13);
  const Tensor ids = from_vector(std::vector<int64_t>{3, 0, 49, 3, 7, 12}, {2, 3});
  const Tensor rows = embedding(table, ids);
  EXPECT_EQ(rows.dtype(), kFloat32);
  EXPECT_TRUE(same_bytes(rows, embedding(table.to(kFloat32), ids)));
}

TEST(Bf16Weights, ATrainedOrDoubleSixteenBitProductIsAnError) {
  const Tensor x = normal_tensor({2, 8}, 14, kFloat32);
  const Tensor w16 = bf16_weight(4, 8, 15).requires_grad_(true);
  expect_error([&] { linear(x, w16); }, {"matmul", "bfloat16", "frozen", "requires grad", ".to(tg::kFloat32)"});
  expect_error([&] { embedding(w16, from_vector(std::vector<int64_t>{1}, {1})); },
               {"embedding", "bfloat16", "requires grad"});
  {
    const NoGradGuard no_grad;  // generation: nothing is trained, so nothing is refused
    EXPECT_TRUE(same_bytes(linear(x, w16), linear(x, w16.detach().to(kFloat32))));
  }
  expect_error([&] { matmul(x.to(kBFloat16), w16.detach().t()); }, {"matmul", "bfloat16", "AutocastGuard"});
  expect_error([&] { matmul(x.to(kFloat64), w16.detach().t()); }, {"matmul", "float64", "bfloat16"});
}

// --- float16 weights: the same kernels, each element widened as autograd/float16.h says --------------

// A (rows, cols) weight of float16 values: normal draws, each the nearest float16, times 4 so that
// some are float16 subnormals and some are large.
Tensor f16_weight(int64_t rows, int64_t cols, uint32_t seed) {
  Tensor w = normal_tensor({rows, cols}, seed, kFloat32) * 4.0;
  w.data_ptr<float>()[0] = 3e-7f;  // a subnormal half (2^-24 is the smallest)
  return test::nearest_float16(w);
}

TEST(F16Weights, LinearIsTheWidenedWeightsProductToTheBit) {
  ThreadsGuard threads;
  for (const int n : {1, 2, 7}) {
    set_num_threads(n);
    for (const Product& p : kThreadedProducts) {  // one shape of each kernel: they are bfloat16's kernels
      const Tensor x = normal_tensor({p.M, p.K}, 100 + p.M, kFloat32);
      const Tensor w16 = f16_weight(p.N, std::max<int64_t>(p.K, 1), 200 + p.N).narrow(1, 0, p.K);
      const Tensor w32 = w16.to(kFloat32);
      SCOPED_TRACE("threads " + std::to_string(n) + ", x (" + std::to_string(p.M) + ", " + std::to_string(p.K) +
                   ") @ w^T, w (" + std::to_string(p.N) + ", " + std::to_string(p.K) + ")");
      ASSERT_EQ(w16.dtype(), kFloat16);
      EXPECT_TRUE(same_bytes(linear(x, w16), linear(x, w32)));
      const Tensor wt16 = f16_weight(std::max<int64_t>(p.K, 1), p.N, 400 + p.N).narrow(0, 0, p.K);
      EXPECT_TRUE(same_bytes(matmul(x, wt16), matmul(x, wt16.to(kFloat32))));
      EXPECT_TRUE(same_bytes(matmul(w16, x.t()), matmul(w32, x.t())));
    }
  }
  const FastKernelsGuard plain(false);
  const Tensor x = normal_tensor({3, 5, 64}, 1, kFloat32), w16 = f16_weight(48, 64, 2);
  EXPECT_TRUE(same_bytes(linear(x, w16), linear(x, w16.to(kFloat32))));
}

TEST(F16Weights, TheRowKernelTheGradientAndEmbeddingAreTheFloat32Weights) {
  const int64_t M = 37, K = 1000;
  const Tensor w16 = f16_weight(M, K, 11), x = normal_tensor({4, K}, 12, kFloat32);
  const Tensor w32 = w16.to(kFloat32);
  expect_row_kernel_gives_the_float32_bits<Float16>(w16, x);
  const Tensor g = normal_tensor({4, M}, 8, kFloat32);
  const Tensor x16 = x.detach().clone().requires_grad_(true), x32 = x.detach().clone().requires_grad_(true);
  (linear(x16, w16) * g).sum().backward();
  (linear(x32, w32) * g).sum().backward();
  EXPECT_TRUE(same_bytes(x16.grad(), x32.grad()));
  const Tensor ids = from_vector(std::vector<int64_t>{3, 0, 36, 3}, {2, 2});
  EXPECT_TRUE(same_bytes(embedding(w16, ids), embedding(w32, ids)));
}

// Every one of the 65,536 halves, widened by the row kernel of each instruction set (the AVX2 and
// AVX-512 copies with the CPU's own conversion), is float16_bits_to_float's value: row i holds half i
// and zeros, x is one then zeros, so y[i] is the widened half times 1 plus zeros (a nan: a nan; -0
// plus the other lanes' +0 is +0, so a zero compares by value).
TEST(F16Weights, TheRowKernelWidensEveryHalfAsTheReferenceDoes) {
  const int64_t M = 65536, K = 40;  // a whole block of 32 and a partial one
  for (const int64_t first : {int64_t{0}, int64_t{35}}) {  // in the whole block, and in the partial one
    Tensor h = empty({M, K}, kFloat16);
    Float16* pw = h.data_ptr<Float16>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) pw[i * K + k] = Float16::from_bits(k == first ? static_cast<uint16_t>(i) : 0);
    std::vector<float> x(K, 0.0f), y(M);
    x[first] = 1.0f;
    for (const kernels::Isa isa : {kernels::Isa::kPortable, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
      if (!kernels::isa_available(isa)) continue;
      gemv::sgemv_rows(y.data(), 1, pw, K, x.data(), M, K, isa);
      int64_t wrong = 0;
      for (int64_t i = 0; i < M; ++i) {
        const float want = float16_bits_to_float(static_cast<uint16_t>(i));
        wrong += std::isnan(want) ? !std::isnan(y[i])
                 : want == 0      ? y[i] != 0
                                  : std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(want);
      }
      EXPECT_EQ(wrong, 0) << kernels::isa_name(isa) << ", column " << first;
    }
  }
}

TEST(F16Weights, Float16IsStorageTheOpsRefuseAndToWidens) {
  const Tensor w16 = f16_weight(4, 8, 15);
  expect_error([&] { w16 + w16; }, {"float16", "frozen 16-bit weights", ".to(tg::kFloat32)"});
  expect_error([&] { normal_tensor({2, 8}, 1, kFloat32).to(kFloat16); }, {"to", "float16", "storage"});
  expect_error([&] { matmul(w16.to(kFloat32).to(kBFloat16), w16.t()); }, {"matmul", "float16", "float32"});
  expect_error([&] { w16.detach().requires_grad_(true); }, {"requires_grad_", "float16"});  // nothing trains one
  // .to widens any layout exactly: a transposed view's elements in its own order
  const Tensor t = w16.t();
  const std::vector<float> widened = t.to(kFloat32).reshape({-1}).tolist<float>();
  const Tensor w32 = w16.to(kFloat32);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(widened[i * 4 + j], w32.at<float>({j, i}));
  EXPECT_EQ(w32.at<float>({0, 0}), float16_bits_to_float(w16.data_ptr<Float16>()[0].bits));
  // printed as PyTorch prints a float16 tensor: its values, then its dtype; a large one summarised
  const std::string small = repr(w16.narrow(0, 0, 1).narrow(1, 0, 3));
  const std::string wide = repr(w32.narrow(0, 0, 1).narrow(1, 0, 3));
  EXPECT_EQ(small, wide.substr(0, wide.size() - 1) + ", dtype=torch.float16)");
  const std::string large = repr(f16_weight(100, 100, 16).t());
  EXPECT_TRUE(test::has_part(large, "...")) << large;
  EXPECT_TRUE(test::has_part(large, "dtype=torch.float16")) << large;
}

}  // namespace
