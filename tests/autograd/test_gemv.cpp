// tests/autograd/test_gemv.cpp — the row-by-row float32 matrix-vector kernel of
// autograd/kernels/gemv.h:
//   * every copy (portable, AVX2, AVX-512 where the CPU has them) gives the bits of the order the
//     header promises (lanes along the row, then a tree), written here as a plain scalar loop;
//   * it agrees with the exact (double) sum within K float roundings of sum |a x|;
//   * a big matrix, cut into bands over the threads, gives the same bits on 1, 2 and 3 threads;
//   * padding between rows never reaches a result, and an inf or a nan stays in its own row;
//   * matmul sends a one-token linear layer (x @ w^T) and a matrix times a column here, and
//     gives matmul_reference's values within tolerance, on the kernels' path and on BLIS's
//     (a matrix whose rows are not contiguous);
//   * the kernel for several vectors gives each vector the bits it gets alone, and matmul sends
//     a batch's decode step (2 to 4 rows times a weight of 1 MiB or more) there.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/gemv.h"
#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/runtime/parallel.h"
#include "test_util.h"

namespace tg {
namespace {

using kernels::Isa;

std::vector<Isa> copies_here() {
  std::vector<Isa> out{Isa::kPortable};
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    if (kernels::isa_available(isa)) out.push_back(isa);
  return out;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// a (M, K) with rows lda = K + pad apart, the padding NaN (it must never reach y).
struct Matrix {
  std::vector<float> data;
  int64_t M, K, lda;
  float at(int64_t i, int64_t k) const { return data[static_cast<size_t>(i * lda + k)]; }
};

Matrix random_matrix(int64_t M, int64_t K, int64_t pad, std::mt19937& gen) {
  Matrix m{std::vector<float>(static_cast<size_t>(std::max<int64_t>(M * (K + pad), 1)), kNaN), M, K, K + pad};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) m.data[static_cast<size_t>(i * m.lda + k)] = normal(gen);
  return m;
}

std::vector<float> random_vector(int64_t n, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(gen);
  return v;
}

// y with incy = 2, the gaps NaN-free sentinels that must stay as they are.
std::vector<float> run_kernel(Isa isa, const Matrix& a, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(2 * a.M), 7.0f);
  gemv::sgemv_rows(y.data(), 2, a.data.data(), a.lda, x.data(), a.M, a.K, isa);
  std::vector<float> out;
  for (int64_t i = 0; i < a.M; ++i) {
    EXPECT_EQ(y[static_cast<size_t>(2 * i + 1)], 7.0f) << "a gap between y's elements was written";
    out.push_back(y[static_cast<size_t>(2 * i)]);
  }
  return out;
}

// The order gemv.h promises, one scalar at a time.
float promised_order(const Matrix& a, const std::vector<float>& x, int64_t i) {
  float lanes[gemv::kLanes] = {};
  for (int64_t k = 0; k < a.K; ++k) {
    const float product = a.at(i, k) * x[static_cast<size_t>(k)];
    lanes[k % gemv::kLanes] = lanes[k % gemv::kLanes] + product;
  }
  for (int width = gemv::kLanes / 2; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) lanes[j] = lanes[j] + lanes[j + width];
  return lanes[0];
}

bool same_bits(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

const std::vector<int64_t> kLengths{0, 1, 7, 31, 32, 33, 64, 100, 768, 1000};

TEST(Gemv, EveryCopyGivesThePromisedOrderBitForBit) {
  std::mt19937 gen(1);
  for (int64_t K : kLengths)
    for (int64_t M : {1, 3, 17})
      for (int64_t pad : {0, 5}) {
        const Matrix a = random_matrix(M, K, pad, gen);
        const std::vector<float> x = random_vector(K, gen);
        for (Isa isa : copies_here()) {
          const std::vector<float> y = run_kernel(isa, a, x);
          for (int64_t i = 0; i < M; ++i)
            EXPECT_TRUE(same_bits(y[static_cast<size_t>(i)], promised_order(a, x, i)))
                << kernels::isa_name(isa) << " M " << M << " K " << K << " pad " << pad << " row " << i << ": "
                << y[static_cast<size_t>(i)] << " vs " << promised_order(a, x, i);
        }
      }
}

TEST(Gemv, AgreesWithTheExactSumWithinKRoundings) {
  std::mt19937 gen(2);
  double worst = 0;
  for (int64_t K : kLengths) {
    const Matrix a = random_matrix(9, K, 3, gen);
    const std::vector<float> x = random_vector(K, gen);
    const std::vector<float> y = run_kernel(gemv::best_isa(), a, x);
    for (int64_t i = 0; i < a.M; ++i) {
      double exact = 0, magnitude = 0;
      for (int64_t k = 0; k < K; ++k) {
        exact += static_cast<double>(a.at(i, k)) * x[static_cast<size_t>(k)];
        magnitude += std::abs(static_cast<double>(a.at(i, k)) * x[static_cast<size_t>(k)]);
      }
      // each product and each add rounds once: at most (K + log2 32 + 1) roundings of sum |a x|
      const double bound = (static_cast<double>(K) + 6.0) * 0x1p-24 * magnitude;
      const double err = std::abs(y[static_cast<size_t>(i)] - exact);
      EXPECT_LE(err, bound) << "K " << K << " row " << i;
      if (bound > 0) worst = std::max(worst, err / bound);
    }
  }
  std::cout << "[ worst    ] gemv against the double sum: " << worst << " of the bound\n";
}

TEST(Gemv, BigMatricesSplitOverThreadsGiveTheSameBits) {
  // 3000 x 768 floats (9 MiB): two bands of at least 4 MiB on 2 or 3 threads
  const test::ThreadCountGuard guard;
  std::mt19937 gen(4);
  const Matrix a = random_matrix(3000, 768, 0, gen);
  const std::vector<float> x = random_vector(768, gen);
  set_num_threads(1);
  const std::vector<float> one = run_kernel(gemv::best_isa(), a, x);
  for (int64_t i : {0, 1499, 1500, 2999})
    ASSERT_TRUE(same_bits(one[static_cast<size_t>(i)], promised_order(a, x, i))) << "row " << i;
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(run_kernel(gemv::best_isa(), a, x), one) << threads << " threads";
  }
}

TEST(Gemv, InfinityAndNanStayInTheirOwnRow) {
  std::mt19937 gen(3);
  Matrix a = random_matrix(4, 100, 0, gen);
  const std::vector<float> x = random_vector(100, gen);
  a.data[static_cast<size_t>(1 * a.lda + 40)] = std::numeric_limits<float>::infinity();
  a.data[static_cast<size_t>(2 * a.lda + 99)] = kNaN;
  for (Isa isa : copies_here()) {
    const std::vector<float> y = run_kernel(isa, a, x);
    EXPECT_TRUE(std::isfinite(y[0]) && std::isfinite(y[3])) << kernels::isa_name(isa);
    EXPECT_TRUE(std::isinf(y[1])) << kernels::isa_name(isa);
    EXPECT_TRUE(std::isnan(y[2])) << kernels::isa_name(isa);
  }
}

TEST(Gemv, MatmulSendsOneTokenLinearLayersHere) {
  FastKernelsGuard fast(true);
  for (int64_t K : {7, 768, 1000}) {
    const Tensor w = randn({50, K}), x = randn({1, K});
    const Tensor y = matmul(x, w.t());  // (1, K) @ (K, 50): w's rows are contiguous
    std::vector<float> expected(50);
    gemv::sgemv_rows(expected.data(), 1, w.data_ptr<float>(), K, x.data_ptr<float>(), 50, K);
    for (int64_t j = 0; j < 50; ++j)
      EXPECT_TRUE(same_bits(y.data_ptr<float>()[j], expected[static_cast<size_t>(j)])) << "K " << K << " column " << j;
    EXPECT_TRUE(test::all_close(y, matmul_reference(x, w.t()), 1e-5, 1e-5)) << "x @ w^T, K " << K;
    // a matrix times a column: a's rows contiguous, the same kernel
    const Tensor column = matmul(w, x.t());  // (50, K) @ (K, 1)
    EXPECT_TRUE(test::all_close(column.view({1, 50}), y, 0, 0)) << "w @ x^T against x @ w^T, K " << K;
  }
}

TEST(Gemv, MatricesWithStridedRowsStillGiveTheReference) {
  FastKernelsGuard fast(true);
  const Tensor w = randn({64, 40}), x = randn({1, 64});
  // x @ w: w (64, 40) read down its columns, rows not contiguous in the product's view (BLIS's path)
  EXPECT_TRUE(test::all_close(matmul(x, w), matmul_reference(x, w), 1e-5, 1e-5)) << "x @ w";
  // a row of x with a stride (every second element of a wider row)
  const Tensor wide = randn({1, 128});
  const Tensor strided_x = wide.slice(1, 0, 128, 2);
  EXPECT_TRUE(test::all_close(matmul(strided_x, w), matmul_reference(strided_x, w), 1e-5, 1e-5))
      << "strided x @ w";
  const Tensor v = randn({40, 64});
  EXPECT_TRUE(test::all_close(matmul(strided_x, v.t()), matmul_reference(strided_x, v.t()), 1e-5, 1e-5))
      << "strided x @ v^T";
}

// sgemv_rows_many: R vectors (ldx apart, NaN padding between them) into y (R rows ldy apart, each
// element incy apart); every element must be the promised order for its row and vector.
TEST(Gemv, ManyVectorsGiveEachVectorThePromisedOrderBitForBit) {
  std::mt19937 gen(5);
  for (int64_t K : {1, 31, 33, 100, 768})
    for (int64_t R : {1, 2, 3, 4, 5, 9}) {
      const Matrix a = random_matrix(13, K, 3, gen);
      const int64_t ldx = K + 2, incy = 2, ldy = 2 * a.M + 1;
      std::vector<float> xs(static_cast<size_t>(R * ldx), kNaN);
      for (int64_t r = 0; r < R; ++r) {
        const std::vector<float> x = random_vector(K, gen);
        std::copy(x.begin(), x.end(), xs.begin() + r * ldx);
      }
      for (Isa isa : copies_here()) {
        std::vector<float> y(static_cast<size_t>(R * ldy), 7.0f);
        gemv::sgemv_rows_many(y.data(), ldy, incy, a.data.data(), a.lda, xs.data(), ldx, R, a.M, K, isa);
        for (int64_t r = 0; r < R; ++r) {
          const std::vector<float> x(xs.begin() + r * ldx, xs.begin() + r * ldx + K);
          for (int64_t i = 0; i < a.M; ++i) {
            const float got = y[static_cast<size_t>(r * ldy + i * incy)];
            EXPECT_TRUE(same_bits(got, promised_order(a, x, i)))
                << kernels::isa_name(isa) << " K " << K << " R " << R << " vector " << r << " row " << i << ": "
                << got << " vs " << promised_order(a, x, i);
          }
          for (int64_t j = 0; j < ldy; ++j) {  // the gaps: odd offsets, and the last element of the row
            if (j % 2 == 1 || j == ldy - 1) {
              EXPECT_EQ(y[static_cast<size_t>(r * ldy + j)], 7.0f) << "a gap was written";
            }
          }
        }
      }
    }
}

// A decode step of a batch of 2 to 4 sequences, x (B, K) @ w^T with w of 1 MiB or more, reads w
// once for all rows (gemm.h): each row gets the bits it gets alone, on any thread count. Five
// rows, and a smaller weight, go to small_gemm: the reference within tolerance there (sums of 768
// products of about 1, so 1e-4 is a few float roundings of the largest terms).
TEST(Gemv, MatmulSendsABatchsDecodeStepHereWithEachRowsBitsAlone) {
  FastKernelsGuard fast(true);
  const test::ThreadCountGuard guard;
  const int64_t K = 768;
  const Tensor w = randn({400, K});  // 1.2 MB
  for (int64_t B : {2, 3, 4}) {
    const Tensor x = randn({B, K});
    Tensor alone = empty({B, 400});
    for (int64_t b = 0; b < B; ++b) alone.slice(0, b, b + 1).copy_(matmul(x.slice(0, b, b + 1), w.t()));
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      const Tensor y = matmul(x, w.t());
      EXPECT_TRUE(test::same_bytes(y, alone)) << "B " << B << ", " << threads << " threads";
    }
    EXPECT_TRUE(test::all_close(alone, matmul_reference(x, w.t()), 1e-4, 1e-5)) << "B " << B;
  }
  const Tensor five = randn({5, K});
  EXPECT_TRUE(test::all_close(matmul(five, w.t()), matmul_reference(five, w.t()), 1e-4, 1e-5)) << "5 rows";
  const Tensor small_w = randn({40, K});
  const Tensor two = randn({2, K});
  EXPECT_TRUE(test::all_close(matmul(two, small_w.t()), matmul_reference(two, small_w.t()), 1e-4, 1e-5))
      << "a 120 kB weight";
}

}  // namespace
}  // namespace tg
