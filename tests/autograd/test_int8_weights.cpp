// tests/autograd/test_int8_weights.cpp — weights quantized to int8 (ops/quantize.cpp):
//   * quantize_int8 keeps every element within its group's bound, |w - ŵ| <= d (1/2 + 2^-16),
//     d = max |w| / 127 over the group; a group's largest element is ±127; a zero group is zeros;
//     a bfloat16 weight quantizes as its float32 copy; the group is the largest divisor asked for;
//   * linear_int8 gives, to the bit, what linear gives the dequantized weight: for every kernel
//     gemm.h picks (a token's rows, a few rows times a big weight, small_gemm's bands, BLIS's whole
//     copy), groups of 32, 64 and of sizes that are not a multiple of the row kernel's 32 lanes, at
//     1 thread, one shape of each kernel at 2 and 7 threads, on the fast path and on the plain one;
//   * a layer's output moves from the float32 weight's by at most the bound carried through the sum;
//   * the gradient reaching x is the dequantized weight's, and passes finite differences in float64;
//   * gemv.h's int8 rows give the dequantized float32 rows' bits on every instruction set here;
//   * embedding_int8 gives the dequantized rows; bad operands are Errors that name what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/gradcheck.h"
#include "autograd/kernels/gemv.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace {

using namespace tg;
using test::expect_error;
using test::normal_tensor;
using test::same_bytes;

struct ThreadsGuard {
  int saved = get_num_threads();
  ~ThreadsGuard() { set_num_threads(saved); }
};

// The bound the tests hold every dequantized element to (ops/quantize.cpp):
// |w - ŵ| <= d (1/2 + 2^-16), d its group's scale.
constexpr double kBoundFactor = 0.5 + 1.0 / 65536;

TEST(Int8Weights, EveryElementIsWithinItsGroupsBound) {
  for (const int64_t group : {32, 64, 7}) {
    const Tensor w = normal_tensor({37, 448}, 1 + static_cast<uint32_t>(group), kFloat32) * 3.0;
    const QuantizedInt8 q = quantize_int8(w, group);
    ASSERT_EQ(q.values.dtype(), kInt8);
    ASSERT_EQ(q.scales.sizes(), (Shape{37, 448 / group}));
    const Tensor back = dequantize_int8(q.values, q.scales);
    const float* pw = w.data_ptr<float>();
    const float* pb = back.data_ptr<float>();
    const int8_t* pq = q.values.data_ptr<int8_t>();
    const float* pd = q.scales.data_ptr<float>();
    for (int64_t r = 0; r < 37; ++r) {
      for (int64_t g = 0; g < 448 / group; ++g) {
        const float d = pd[r * (448 / group) + g];
        int largest = 0;
        float largest_w = 0;
        for (int64_t k = g * group; k < (g + 1) * group; ++k) {
          const int64_t i = r * 448 + k;
          EXPECT_LE(std::abs(double(pw[i]) - double(pb[i])), d * kBoundFactor) << r << " " << k;
          EXPECT_EQ(pb[i], static_cast<float>(pq[i]) * d);  // ŵ = q * d, rounded once
          largest = std::max(largest, std::abs(int(pq[i])));
          largest_w = std::max(largest_w, std::abs(pw[i]));
        }
        EXPECT_EQ(largest, 127);
        EXPECT_EQ(d, largest_w / 127.0f);
      }
    }
  }
}

TEST(Int8Weights, ZerosBfloat16AndTheGroupRule) {
  Tensor w = normal_tensor({4, 64}, 3, kFloat32);
  w.narrow(0, 1, 1).narrow(1, 0, 32).zero_();  // row 1's first group
  const QuantizedInt8 q = quantize_int8(w, 32);
  EXPECT_EQ(q.scales.data_ptr<float>()[2], 0.0f);
  for (int64_t k = 0; k < 32; ++k) EXPECT_EQ(q.values.data_ptr<int8_t>()[64 + k], 0);
  EXPECT_TRUE(same_bytes(dequantize_int8(q.values, q.scales).narrow(0, 1, 1).narrow(1, 0, 32),
                         zeros({1, 32}, kFloat32)));
  // a bfloat16 weight quantizes as its float32 copy (widening is exact)
  const Tensor w16 = normal_tensor({5, 96}, 4, kFloat32).to(kBFloat16);
  const QuantizedInt8 a = quantize_int8(w16), b = quantize_int8(w16.to(kFloat32));
  EXPECT_TRUE(same_bytes(a.scales, b.scales));
  EXPECT_EQ(0, std::memcmp(a.values.data_ptr<int8_t>(), b.values.data_ptr<int8_t>(), 5 * 96));
  // so does a float16 one (an F16 checkpoint's)
  const Tensor h16 = test::nearest_float16(normal_tensor({5, 96}, 4, kFloat32));
  const QuantizedInt8 c = quantize_int8(h16), e = quantize_int8(h16.to(kFloat32));
  EXPECT_TRUE(same_bytes(c.scales, e.scales));
  EXPECT_EQ(0, std::memcmp(c.values.data_ptr<int8_t>(), e.values.data_ptr<int8_t>(), 5 * 96));
  // the group: the largest divisor of the row's length at most the size asked
  EXPECT_EQ(int8_group_size(2048, 32), 32);
  EXPECT_EQ(int8_group_size(576, 64), 64);
  EXPECT_EQ(int8_group_size(48, 32), 24);
  EXPECT_EQ(int8_group_size(100, 32), 25);
  EXPECT_EQ(int8_group_size(97, 32), 1);
  EXPECT_EQ(int8_group_size(20, 32), 20);
  EXPECT_EQ(quantize_int8(normal_tensor({3, 48}, 5, kFloat32)).scales.size(1), 2);
}

// q is std::round(w / d) clamped to ±127 (a half away from zero), element by element: on normal
// weights of every sign and size, and on quotients that are exact halves, just under a half, and
// one float under and over each (the largest of each group is 127, so d = 1 there and w / d = w).
TEST(Int8Weights, EachValueIsTheRoundedQuotientHalvesAwayFromZero) {
  std::vector<float> w = normal_tensor({8, 256}, 21, kFloat32).tolist<float>();
  for (float& v : w) v *= 40;
  const std::vector<float> edges = {0.5f, -0.5f, 1.5f, -2.5f, 126.5f, -126.5f, 0.49999997f, -0.49999997f,
                                    std::nextafter(2.5f, 0.0f), std::nextafter(2.5f, 3.0f), 3.0f, -0.0f,
                                    std::nextafter(0.5f, 1.0f), 1e-30f, -7.4999995f, 126.49999f};
  for (size_t i = 0; i < edges.size(); ++i) {  // the edges in row 0's groups, each group with a 127
    w[i] = edges[i];
    w[32 * (i / 32) + 31] = 127;
  }
  for (size_t g = 0; g < 8; ++g) w[32 * g + 31] = 127;
  const Tensor weight = from_vector(std::vector<double>(w.begin(), w.end()), {8, 256}, kFloat32);
  for (const Tensor& t : {weight, weight.to(kBFloat16)}) {
    const std::vector<float> values = t.to(kFloat32).tolist<float>();
    const QuantizedInt8 q = quantize_int8(t, 32);
    const int8_t* pq = q.values.data_ptr<int8_t>();
    const float* pd = q.scales.data_ptr<float>();
    for (int64_t i = 0; i < 8 * 256; ++i) {
      const float d = pd[i / 32];
      const float expected = d == 0 ? 0 : std::clamp(std::round(values[i] / d), -127.0f, 127.0f);
      ASSERT_EQ(pq[i], static_cast<int8_t>(expected)) << "element " << i << ", w = " << values[i] << ", d = " << d;
    }
    if (t.dtype() == kFloat32) {  // (bfloat16 rounds some edges to other values; the loop above holds for both)
      EXPECT_EQ(pq[0], 1);   // 0.5
      EXPECT_EQ(pq[1], -1);  // -0.5
      EXPECT_EQ(pq[3], -3);  // -2.5
      EXPECT_EQ(pq[6], 0);   // 0.49999997, whose sum with 0.5 rounds to 1 in float32
    }
  }
  // an inf in a later group and a nan after it: the first is named, whichever thread saw which
  ThreadsGuard threads;
  for (const int n : {1, 2, 7}) {
    set_num_threads(n);
    std::vector<float> bad = w;
    bad[5 * 256 + 100] = INFINITY;
    bad[7 * 256 + 3] = std::nanf("");
    expect_error([&] { quantize_int8(from_vector(std::vector<double>(bad.begin(), bad.end()), {8, 256}, kFloat32)); },
                 {"quantize_int8", "non-finite", "inf", "[5, 100]"});
  }
}

struct Product {
  int64_t M, N, K, group;
};

// x (M, K) @ Ŵ^T, Ŵ (N, K): one row, a few rows times a weight of 1 MiB or more, small_gemm's
// sizes and BLIS's, with groups of 32 and 64 (one scale a block of the row kernel) and of 24, 40
// and 7 (the row dequantized first).
const std::vector<Product> kProducts = {
    {1, 7, 64, 32},     {1, 300, 128, 32},  {1, 2048, 160, 32}, {2, 2048, 128, 64}, {4, 4096, 96, 32},
    {3, 100, 48, 32},   {5, 77, 56, 7},     {8, 2050, 128, 32}, {64, 96, 320, 64},  {7, 1, 64, 32},
    {300, 333, 256, 32}, {129, 520, 600, 40}, {40, 3000, 200, 40}, {6, 4100, 1024, 32}, {1, 2049, 120, 40},
    {2, 3000, 120, 40},
};
// One of each kernel, for 2 and 7 threads: how the work is split is the kernel's, not the shape's.
const std::vector<Product> kThreadedProducts = {
    {1, 2048, 160, 32}, {1, 2049, 120, 40}, {2, 2048, 128, 64}, {4, 4096, 96, 32},
    {5, 77, 56, 7},     {64, 96, 320, 64},  {300, 333, 256, 32},
};

TEST(Int8Weights, LinearIsTheDequantizedWeightsProductToTheBit) {
  ThreadsGuard threads;
  for (const int n : {1, 2, 7}) {
    set_num_threads(n);
    for (const Product& p : n == 1 ? kProducts : kThreadedProducts) {
      const Tensor x = normal_tensor({p.M, p.K}, 100 + static_cast<uint32_t>(p.M), kFloat32);
      const QuantizedInt8 q = quantize_int8(normal_tensor({p.N, p.K}, 200 + static_cast<uint32_t>(p.N), kFloat32), p.group);
      const Tensor w = dequantize_int8(q.values, q.scales);
      const Tensor bias = normal_tensor({p.N}, 300, kFloat32);
      SCOPED_TRACE("threads " + std::to_string(n) + ", x (" + std::to_string(p.M) + ", " + std::to_string(p.K) +
                   ") @ w^T, w (" + std::to_string(p.N) + ", " + std::to_string(p.K) + "), group " +
                   std::to_string(p.group));
      const FastKernelsGuard fast(true);
      EXPECT_TRUE(same_bytes(linear_int8(x, q.values, q.scales), linear(x, w)));
      EXPECT_TRUE(same_bytes(linear_int8(x, q.values, q.scales, bias), linear(x, w, bias)));
    }
  }
}

TEST(Int8Weights, BatchedActivationsAndThePlainPath) {
  const Tensor x = normal_tensor({3, 5, 64}, 1, kFloat32);
  const QuantizedInt8 q = quantize_int8(normal_tensor({48, 64}, 2, kFloat32));
  const Tensor w = dequantize_int8(q.values, q.scales);
  {
    const FastKernelsGuard fast(true);
    EXPECT_TRUE(same_bytes(linear_int8(x, q.values, q.scales), linear(x, w)));
    EXPECT_TRUE(same_bytes(linear_int8(x.transpose(0, 1), q.values, q.scales), linear(x.transpose(0, 1), w)));
  }
  const Tensor fast = linear_int8(x, q.values, q.scales);
  const FastKernelsGuard plain(false);
  const Tensor reference = linear_int8(x, q.values, q.scales);
  EXPECT_TRUE(same_bytes(reference, linear(x, w)));
  EXPECT_TRUE(test::all_close(fast, reference, 1e-5, 1e-5));
}

// The bound carried through a layer: |x.w - x.ŵ| <= sum over groups of d_g (1/2 + 2^-16) sum |x_k|,
// plus float32's rounding of the two sums (the same kernel reads both).
TEST(Int8Weights, ALayersOutputMovesWithinTheBound) {
  const int64_t M = 6, N = 200, K = 256, group = 32;
  const Tensor x = normal_tensor({M, K}, 9, kFloat32), w = normal_tensor({N, K}, 10, kFloat32) * 0.05;
  const QuantizedInt8 q = quantize_int8(w, group);
  const Tensor got = linear_int8(x, q.values, q.scales), want = linear(x, w);
  const float* px = x.data_ptr<float>();
  const float* pd = q.scales.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double bound = 0, magnitude = 0;
      for (int64_t k = 0; k < K; ++k) {
        bound += pd[j * (K / group) + k / group] * kBoundFactor * std::abs(px[i * K + k]);
        magnitude += std::abs(px[i * K + k] * w.data_ptr<float>()[j * K + k]);
      }
      const double rounding = 2 * K * 6e-8 * (magnitude + bound);
      EXPECT_LE(std::abs(double(got.data_ptr<float>()[i * N + j]) - double(want.data_ptr<float>()[i * N + j])),
                bound + rounding);
    }
  }
}

TEST(Int8Weights, TheGradientOfXIsTheDequantizedWeightsAndPassesGradcheck) {
  for (const Product& p : std::vector<Product>{{1, 300, 128, 32}, {4, 4096, 96, 32}, {64, 96, 320, 64}}) {
    const QuantizedInt8 q = quantize_int8(normal_tensor({p.N, p.K}, 7, kFloat32), p.group);
    const Tensor w = dequantize_int8(q.values, q.scales);
    const Tensor g = normal_tensor({p.M, p.N}, 8, kFloat32);
    const Tensor x8 = normal_tensor({p.M, p.K}, 9, kFloat32).requires_grad_(true);
    const Tensor x32 = x8.detach().clone().requires_grad_(true);
    (linear_int8(x8, q.values, q.scales) * g).sum().backward();
    (linear(x32, w) * g).sum().backward();
    EXPECT_TRUE(same_bytes(x8.grad(), x32.grad())) << p.M << " " << p.N << " " << p.K;
  }
  // float64: the finite differences of x -> x Ŵ^T + b
  const QuantizedInt8 q = quantize_int8(normal_tensor({5, 12}, 11, kFloat32), 4);
  const Tensor x = normal_tensor({3, 12}, 12).requires_grad_(true);
  const Tensor b = normal_tensor({5}, 13).requires_grad_(true);
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) { return linear_int8(in[0], q.values, q.scales, in[1]); }, {x, b});
  EXPECT_TRUE(r.passed) << r;
}

TEST(Int8Weights, TheRowKernelGivesTheDequantizedRowsBits) {
  const int64_t M = 37, K = 960;
  const Tensor x = normal_tensor({4, K}, 12, kFloat32);
  for (const int64_t group : {32, 64, 40}) {
    const QuantizedInt8 q = quantize_int8(normal_tensor({M, K}, 11, kFloat32), group);
    const Tensor w = dequantize_int8(q.values, q.scales);
    const gemv::Int8Matrix a{q.values.data_ptr<int8_t>(), q.scales.data_ptr<float>(), group};
    for (const kernels::Isa isa : {kernels::Isa::kPortable, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
      if (!kernels::isa_available(isa)) continue;
      for (const int64_t R : {1, 3, 4}) {
        std::vector<float> y8(R * M), y32(R * M);
        gemv::sgemv_rows_many(y8.data(), M, 1, a, x.data_ptr<float>(), K, R, M, K, isa);
        gemv::sgemv_rows_many(y32.data(), M, 1, w.data_ptr<float>(), K, x.data_ptr<float>(), K, R, M, K, isa);
        EXPECT_EQ(y8, y32) << kernels::isa_name(isa) << ", group " << group << ", " << R << " vectors";
      }
    }
  }
}

TEST(Int8Weights, EmbeddingRowsAreTheDequantizedRows) {
  const QuantizedInt8 q = quantize_int8(normal_tensor({50, 48}, 13, kFloat32));
  const Tensor ids = from_vector(std::vector<int64_t>{3, 0, 49, 3, 7, 12}, {2, 3});
  const Tensor rows = embedding_int8(q.values, q.scales, ids);
  EXPECT_EQ(rows.sizes(), (Shape{2, 3, 48}));
  EXPECT_TRUE(same_bytes(rows, embedding(dequantize_int8(q.values, q.scales), ids)));
}

TEST(Int8Weights, BadOperandsAreErrorsThatNameWhatIsWrong) {
  const QuantizedInt8 q = quantize_int8(normal_tensor({6, 64}, 14, kFloat32));
  const Tensor x = normal_tensor({2, 64}, 15, kFloat32);
  expect_error([&] { linear_int8(normal_tensor({2, 60}, 1, kFloat32), q.values, q.scales); },
               {"linear_int8", "(2,60)", "in_features = 64"});
  expect_error([&] { linear_int8(x, q.values, q.scales.narrow(1, 0, 1).contiguous().expand({6, 3}).contiguous()); },
               {"linear_int8", "scales of shape (6,3)", "values of shape (6,64)"});
  expect_error([&] { linear_int8(x, q.scales, q.scales); }, {"linear_int8", "values", "int8", "float32"});
  expect_error([&] { linear_int8(x.to(kBFloat16), q.values, q.scales); }, {"linear_int8", "bfloat16"});
  expect_error([&] { embedding_int8(q.values, q.scales, from_vector(std::vector<int64_t>{6}, {1})); },
               {"embedding_int8", "out of range", "6", "0..5"});
  Tensor bad = normal_tensor({3, 32}, 16, kFloat32);
  bad.data_ptr<float>()[40] = std::nanf("");
  expect_error([&] { quantize_int8(bad); }, {"quantize_int8", "non-finite", "nan", "[1, 8]"});
  expect_error([&] { quantize_int8(normal_tensor({3, 32}, 16, kFloat32), 0); }, {"group size", "at least 1", "0"});
  expect_error([&] { quantize_int8(normal_tensor({32}, 16, kFloat32)); }, {"quantize_int8", "2-d", "(32)"});
  // int8 tensors are storage for these ops alone
  expect_error([&] { q.values.to(kFloat32); }, {"int8", "quantized weight", "dequantize_int8"});
  expect_error([&] { matmul(x, q.values.t()); }, {"matmul", "int8"});
}

}  // namespace
