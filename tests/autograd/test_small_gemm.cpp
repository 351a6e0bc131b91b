// tests/autograd/test_small_gemm.cpp — the register-blocked float32 kernels of
// autograd/kernels/small_gemm.h against a plain fma chain (bit for bit: the kernels promise that
// order) and against matmul_reference's double sums (within tolerance), on edge shapes, strided
// operands, and any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/kernels/small_gemm.h"
#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/runtime/parallel.h"
#include "test_util.h"

namespace tg {
namespace {

using kernels::Isa;

// A matrix stored with explicit strides inside a larger buffer, so that views (transposed,
// with a row stride larger than the row) are exercised; the buffer's other elements are NaN
// and must never reach a result.
struct Strided {
  std::vector<float> data;
  int64_t rows, cols, rs, cs;
  float at(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * rs + j * cs)]; }
};

Strided make_matrix(int64_t rows, int64_t cols, bool transposed, int64_t pad, std::mt19937& gen) {
  Strided m{{}, rows, cols, 0, 0};
  if (transposed) {  // column-major, each column `rows + pad` apart
    m.rs = 1;
    m.cs = rows + pad;
    m.data.assign(static_cast<size_t>(cols * m.cs), std::numeric_limits<float>::quiet_NaN());
  } else {  // row-major, each row `cols + pad` apart
    m.rs = cols + pad;
    m.cs = 1;
    m.data.assign(static_cast<size_t>(rows * m.rs), std::numeric_limits<float>::quiet_NaN());
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m.data[static_cast<size_t>(i * m.rs + j * m.cs)] = normal(gen);
  return m;
}

// c[i][j] = fma(a[i][k], b[k][j], c) for k = 0..K-1 from c = 0: the order the kernels promise.
std::vector<float> fma_chain(const Strided& a, const Strided& b) {
  std::vector<float> c(static_cast<size_t>(a.rows * b.cols));
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < b.cols; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < a.cols; ++k) acc = std::fma(a.at(i, k), b.at(k, j), acc);
      c[static_cast<size_t>(i * b.cols + j)] = acc;
    }
  }
  return c;
}

// The kernels this CPU runs: AVX2's 6x16 blocks, AVX-512's 8x32 blocks.
std::vector<Isa> kernels_here() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512})
    if (kernels::isa_available(isa)) isas.push_back(isa);
  return isas;
}

const char* kernel_name(Isa isa) { return kernels::isa_name(isa); }

// c (M,N) written with row stride ldc = N + 3 into a buffer of sentinels; returns the (M,N) part
// and checks that no sentinel between the rows was touched.
std::vector<float> run_kernel(Isa kernel, const Strided& a, const Strided& b) {
  const int64_t M = a.rows, N = b.cols, K = a.cols, ldc = N + 3;
  const float sentinel = -12345.0f;
  std::vector<float> c(static_cast<size_t>(M * ldc), sentinel);
  small_gemm::sgemm(c.data(), ldc, a.data.data(), a.rs, a.cs, b.data.data(), b.rs, b.cs, M, N, K, kernel);
  std::vector<float> out;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float v = c[static_cast<size_t>(i * ldc + j)];
      if (j < N) {
        out.push_back(v);
      } else {
        EXPECT_EQ(v, sentinel) << "the kernel wrote past column " << N << " at row " << i << ", column " << j;
      }
    }
  }
  return out;
}

struct Case {
  int64_t M, N, K;
  bool a_transposed, b_transposed;
  int64_t pad;
};

std::string case_name(const Case& c) {
  return std::to_string(c.M) + "x" + std::to_string(c.K) + (c.a_transposed ? "^T" : "") + " @ " +
         std::to_string(c.K) + "x" + std::to_string(c.N) + (c.b_transposed ? "^T" : "") + " pad " +
         std::to_string(c.pad);
}

// Edge sizes around the blocks (6 and 8 rows; 16 and 32 columns) and attention's shapes.
std::vector<Case> cases() {
  std::vector<Case> out;
  const int64_t sizes[] = {1, 2, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64};
  int n = 0;
  for (int64_t M : sizes) {
    for (int64_t N : sizes) {
      const int64_t K = sizes[(n * 5 + 3) % 14];
      out.push_back({M, N, K, n % 2 == 1, n % 3 == 1, n % 4});
      ++n;
    }
  }
  out.push_back({64, 64, 16, false, true, 48});    // tiny GPT: q @ k^T, q and k views of (B,T,C)
  out.push_back({64, 16, 64, false, false, 48});   // weights @ v
  out.push_back({128, 32, 128, true, false, 0});   // weights^T @ dout
  out.push_back({100, 96, 256, false, false, 1});  // one block of k
  out.push_back({37, 45, 257, true, false, 2});     // a second block of one k
  out.push_back({64, 64, 1024, true, false, 0});    // a weight gradient: g^T @ x, K = B*T
  out.push_back({3, 2081, 2048, false, true, 0});   // a head's x @ W^T: b packed in two bands of columns
  out.push_back({5, 2081, 2048, false, false, 1});  // the same through the plain packing
  return out;
}

TEST(SmallGemm, EveryKernelIsTheFmaChainBitForBit) {
  std::mt19937 gen(7);
  for (const Case& c : cases()) {
    const Strided a = make_matrix(c.M, c.K, c.a_transposed, c.pad, gen);
    const Strided b = make_matrix(c.K, c.N, c.b_transposed, c.pad, gen);
    const std::vector<float> expected = fma_chain(a, b);
    for (Isa kernel : kernels_here()) {
      const std::vector<float> got = run_kernel(kernel, a, b);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], expected[i]) << kernel_name(kernel) << ", " << case_name(c) << ": element (" << i / c.N
                                       << ", " << i % c.N << ") " << got[i] << " != fma chain " << expected[i];
      }
    }
  }
}

TEST(SmallGemm, MatchesMatmulReferenceWithinTolerance) {
  std::mt19937 gen(8);
  for (const Case& c : cases()) {
    const Strided a = make_matrix(c.M, c.K, c.a_transposed, c.pad, gen);
    const Strided b = make_matrix(c.K, c.N, c.b_transposed, c.pad, gen);
    std::vector<double> ac, bc;  // the float32 values, contiguous, for the oracle
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t k = 0; k < c.K; ++k) ac.push_back(a.at(i, k));
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t j = 0; j < c.N; ++j) bc.push_back(b.at(k, j));
    const std::vector<float> expected =
        matmul_reference(from_vector(ac, {c.M, c.K}), from_vector(bc, {c.K, c.N})).tolist<float>();
    // Tolerance: atol + rtol * |ref| with atol = K * 2^-24 * sum_k |a_ik * b_kj|, the textbook
    // bound for a float sum of K products (it grows with K and with cancellation), rtol 1e-5.
    for (Isa kernel : kernels_here()) {
      const std::vector<float> got = run_kernel(kernel, a, b);
      for (int64_t i = 0; i < c.M; ++i) {
        for (int64_t j = 0; j < c.N; ++j) {
          double magnitude = 0.0;
          for (int64_t k = 0; k < c.K; ++k) magnitude += std::abs(static_cast<double>(a.at(i, k)) * b.at(k, j));
          const double atol = static_cast<double>(c.K) * std::ldexp(1.0, -24) * magnitude;
          const size_t at = static_cast<size_t>(i * c.N + j);
          const double err = std::abs(static_cast<double>(got[at]) - expected[at]);
          ASSERT_LE(err, atol + 1e-5 * std::abs(expected[at]))
              << kernel_name(kernel) << ", " << case_name(c) << ": element (" << i << ", " << j << ") " << got[at]
              << " vs " << expected[at];
        }
      }
    }
  }
}

TEST(SmallGemm, InfinityAndNanReachOnlyTheirOwnRowsAndColumns) {
  // Zero-padded edge blocks must not turn a value into NaN elsewhere: 0 * inf stays in padding.
  std::mt19937 gen(9);
  Strided a = make_matrix(7, 5, false, 0, gen), b = make_matrix(5, 17, false, 0, gen);
  a.data[static_cast<size_t>(6 * a.rs + 2)] = std::numeric_limits<float>::infinity();  // a[6][2]
  b.data[static_cast<size_t>(3 * b.rs + 16)] = std::numeric_limits<float>::quiet_NaN();  // b[3][16]
  const std::vector<float> expected = fma_chain(a, b);
  for (Isa kernel : kernels_here()) {
    const std::vector<float> got = run_kernel(kernel, a, b);
    for (int64_t i = 0; i < 7; ++i) {
      for (int64_t j = 0; j < 17; ++j) {
        const float g = got[static_cast<size_t>(i * 17 + j)], e = expected[static_cast<size_t>(i * 17 + j)];
        EXPECT_EQ(std::isnan(g), j == 16) << kernel_name(kernel) << " (" << i << ", " << j << ") = " << g;
        if (!std::isnan(e)) {
          EXPECT_EQ(g, e) << kernel_name(kernel) << " (" << i << ", " << j << ")";
        }
      }
    }
  }
}

TEST(SmallGemm, SameBitsOnOneThreadAndMany) {
  // Rows are split over the threads in whole blocks; each element's fma chain is the same.
  const test::ThreadCountGuard guard;
  std::mt19937 gen(10);
  const Strided a = make_matrix(1000, 64, false, 0, gen), b = make_matrix(64, 96, true, 0, gen);
  for (Isa kernel : kernels_here()) {
    set_num_threads(1);
    const std::vector<float> one = run_kernel(kernel, a, b);
    for (int threads : {2, 3}) {
      set_num_threads(threads);
      EXPECT_EQ(run_kernel(kernel, a, b), one) << kernel_name(kernel) << " on " << threads << " threads";
    }
  }
}

TEST(SmallGemm, FewRowsSplitByColumnsGiveTheFmaChainOnAnyThreadCount) {
  // Fewer blocks of rows than threads: the columns are split in whole panels, each thread
  // copying its own (b transposed, as a head's x @ W^T, or row-major with a ragged last panel).
  const test::ThreadCountGuard guard;
  std::mt19937 gen(11);
  for (int64_t M : {3, 5, 8, 20}) {
    for (bool b_transposed : {true, false}) {
      const Strided a = make_matrix(M, 768, false, 0, gen), b = make_matrix(768, 2081, b_transposed, 0, gen);
      const std::vector<float> expected = fma_chain(a, b);
      for (Isa kernel : kernels_here()) {
        for (int threads : {1, 2, 3, 16}) {
          set_num_threads(threads);
          EXPECT_EQ(run_kernel(kernel, a, b), expected)
              << kernel_name(kernel) << ", " << M << " rows, b " << (b_transposed ? "transposed" : "row-major")
              << ", " << threads << " threads";
        }
      }
    }
  }
}

TEST(SmallGemm, DispatchSendsSmallProductsHereAndLargeKToBlis) {
  if (!kernels::isa_available(Isa::kAvx2)) GTEST_SKIP() << "no AVX2: every product goes to BLIS";
  EXPECT_TRUE(small_gemm::worth_it(64, 64, 16));
  EXPECT_TRUE(small_gemm::worth_it(128, 128, 128));
  EXPECT_FALSE(small_gemm::worth_it(1024, 1024, 1024));
  EXPECT_FALSE(small_gemm::worth_it(1536, 384, 2048));  // a wide layer's weight gradient
  const bool avx512 = small_gemm::best_isa_for(128) == Isa::kAvx512;
  EXPECT_EQ(small_gemm::worth_it(2048, 128, 128), avx512);  // a linear layer
  EXPECT_EQ(small_gemm::worth_it(128, 512, 2048), avx512);  // a narrow layer's weight gradient
}

}  // namespace
}  // namespace tg
