// kernels/bf16_gemm.h: bfloat16 operands, float32 sums. Against the float64 product of the
// rounded inputs within float32 accumulation's bound, at odd sizes, K = 1 and transposed
// operands, given as float32 or as bfloat16; the FMA kernel against vdpbf16ps bit for bit where the CPU has it; and
// the same bits at 1 and 2 threads. Sizes cross the kernel's blocks (k-blocks of up to 384, row
// blocks of 192, tiles of 12 x 32), and the vector packing (a contiguous row or column) gives the
// bits of the scalar one (any other strides) on NaNs, infinities, denormals and ties, as does a
// bfloat16 A read unpacked. A bias is the float32 add after the product, bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/kernels/bf16_gemm.h"
#include "autograd/runtime/parallel.h"

namespace tg::kernels::bf16_gemm {
namespace {

struct Case {
  int64_t M, N, K;
  bool a_transposed, b_transposed;
};

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(gen);
  return v;
}

std::vector<BFloat16> rounded(const std::vector<float>& v) { return std::vector<BFloat16>(v.begin(), v.end()); }

Operand operand_a(const Case& t, const void* data, ScalarType dtype) {
  return t.a_transposed ? Operand{data, dtype, 1, t.M} : Operand{data, dtype, t.K, 1};
}
Operand operand_b(const Case& t, const void* data, ScalarType dtype) {
  return t.b_transposed ? Operand{data, dtype, 1, t.K} : Operand{data, dtype, t.N, 1};
}

// c (M, N) of the kernel, with A and B stored transposed or not, given as float32.
std::vector<float> run(const Case& t, const std::vector<float>& a, const std::vector<float>& b, Kernel kernel) {
  std::vector<float> c(static_cast<size_t>(t.M * t.N), -1.0f);
  gemm(c.data(), t.N, operand_a(t, a.data(), kFloat32), operand_b(t, b.data(), kFloat32), t.M, t.N, t.K, kernel);
  return c;
}

// The oracle: the rounded inputs' products summed in double, and sum |a b| for the bound.
double element(const Operand& m, int64_t i, int64_t j) {
  const int64_t at = i * m.row_stride + j * m.col_stride;
  return m.dtype == kBFloat16 ? static_cast<float>(static_cast<const BFloat16*>(m.data)[at])
                              : static_cast<float>(BFloat16(static_cast<const float*>(m.data)[at]));
}

const std::vector<Case> kCases = {{1, 1, 1, false, false},    {7, 33, 5, false, false},  {6, 32, 2, false, false},
                                  {13, 17, 1, true, false},   {5, 64, 129, false, true}, {64, 96, 130, true, true},
                                  {100, 50, 300, false, false}, {3, 200, 64, false, true},
                                  // across the blocks: K past one and two k-blocks (odd, and not a
                                  // multiple of the block), M past a row block, N past the tile
                                  {199, 70, 515, false, false}, {205, 33, 1201, true, true},
                                  {26, 100, 1, true, false},   {1, 1, 600, false, true},
                                  // A bfloat16 with k contiguous and K even is read unpacked in whole
                                  // row blocks: two whole blocks (the second short), then a block
                                  // with a short last tile, over several k-blocks
                                  {240, 45, 800, false, false}, {250, 64, 130, false, true}};

void expect_within_accumulation_bound(const std::vector<float>& c, const Operand& a, const Operand& b, int64_t M,
                                      int64_t N, int64_t K, const std::string& what) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0, abs_sum = 0;  // the bound: K * 2^-24 * sum |a b|
      for (int64_t k = 0; k < K; ++k) {
        sum += element(a, i, k) * element(b, k, j);
        abs_sum += std::abs(element(a, i, k) * element(b, k, j));
      }
      const double bound = static_cast<double>(K) * std::ldexp(1.0, -24) * abs_sum + 1e-30;
      ASSERT_LE(std::abs(c[i * N + j] - sum), bound) << what << " M " << M << " N " << N << " K " << K << " at ("
                                                     << i << ", " << j << ")";
    }
}

TEST(Bf16Gemm, WithinFloat32AccumulationOfTheRoundedProduct) {
  for (const Kernel kernel : {Kernel::kFma, Kernel::kAvx512Bf16}) {
    if (!kernel_available(kernel)) continue;
    for (const Case& t : kCases) {
      const std::vector<float> a = random_values(t.M * t.K, 1), b = random_values(t.K * t.N, 2);
      expect_within_accumulation_bound(run(t, a, b, kernel), operand_a(t, a.data(), kFloat32),
                                       operand_b(t, b.data(), kFloat32), t.M, t.N, t.K, kernel_name(kernel));
    }
  }
}

TEST(Bf16Gemm, Bfloat16OperandsGiveTheBitsOfTheirFloat32Originals) {
  for (const Case& t : kCases) {
    const std::vector<float> a = random_values(t.M * t.K, 7), b = random_values(t.K * t.N, 8);
    const std::vector<BFloat16> a16 = rounded(a), b16 = rounded(b);
    std::vector<float> c(static_cast<size_t>(t.M * t.N), -1.0f);
    gemm(c.data(), t.N, operand_a(t, a16.data(), kBFloat16), operand_b(t, b.data(), kFloat32), t.M, t.N, t.K,
         best_kernel());
    EXPECT_EQ(c, run(t, a, b, best_kernel())) << "M " << t.M << " N " << t.N << " K " << t.K;
    gemm(c.data(), t.N, operand_a(t, a.data(), kFloat32), operand_b(t, b16.data(), kBFloat16), t.M, t.N, t.K,
         best_kernel());
    EXPECT_EQ(c, run(t, a, b, best_kernel())) << "M " << t.M << " N " << t.N << " K " << t.K;
  }
}

TEST(Bf16Gemm, ReadsABroadcastOperandThroughAZeroStride) {
  const int64_t M = 9, N = 40, K = 7;
  const std::vector<float> row = random_values(K, 9), b = random_values(K * N, 10);
  const Operand a{row.data(), kFloat32, 0, 1};  // every row of A is `row`
  const Operand bm{b.data(), kFloat32, N, 1};
  std::vector<float> c(static_cast<size_t>(M * N), -1.0f);
  gemm(c.data(), N, a, bm, M, N, K, best_kernel());
  expect_within_accumulation_bound(c, a, bm, M, N, K, "broadcast");
}

TEST(Bf16Gemm, AnEmptySumIsZero) {
  std::vector<float> c(6, -1.0f);
  const float unused = 1.0f;
  gemm(c.data(), 3, Operand{&unused, kFloat32, 0, 1}, Operand{&unused, kFloat32, 3, 1}, 2, 3, 0, best_kernel());
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

TEST(Bf16Gemm, TheFmaKernelGivesVdpbf16psBitsExactly) {
  if (!kernel_available(Kernel::kAvx512Bf16)) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  for (const Case& t : kCases) {
    const std::vector<float> a = random_values(t.M * t.K, 3), b = random_values(t.K * t.N, 4);
    const std::vector<float> fma = run(t, a, b, Kernel::kFma), bf16 = run(t, a, b, Kernel::kAvx512Bf16);
    for (size_t i = 0; i < fma.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(fma[i]), std::bit_cast<uint32_t>(bf16[i]))
          << "M " << t.M << " N " << t.N << " K " << t.K << " at " << i;
  }
}

// vdpbf16ps's denormal rule, which the FMA kernel follows in plain code on any CPU (x86-64's
// AVX2 and portable copies, arm64's): a denormal bfloat16 input reads as zero, and a sum that is
// a denormal becomes a zero of its sign. Each case is one row times one column, its expected bits
// worked out by hand. (On an AVX512_BF16 CPU the instruction itself must agree.)
TEST(Bf16Gemm, DenormalInputsAndSumsAreFlushedToSignedZero) {
  struct Flush {
    std::vector<float> a, b;  // a (1, K), b (K, 1)
    uint32_t want;            // c's bits
    const char* what;
  };
  const float tiny = std::ldexp(1.0f, -70);        // normal, and exact in bfloat16
  const float denormal = std::ldexp(1.0f, -130);   // a denormal float32 and bfloat16
  const std::vector<Flush> cases = {
      {{denormal}, {1.0f}, 0x00000000u, "a denormal input reads as +0"},
      {{-denormal}, {std::ldexp(1.0f, 100)}, 0x00000000u, "a denormal input reads as -0: -0 * x + 0 = +0"},
      {{tiny}, {tiny}, 0x00000000u, "2^-140, a denormal product, becomes +0"},
      {{-tiny}, {tiny}, 0x80000000u, "-2^-140 becomes -0"},
      {{std::ldexp(-1.0f, -63), std::ldexp(1.0f, -63)}, {std::ldexp(1.0f, -64), std::ldexp(1.0f, -63)}, 0x00000000u,
       "2^-126 (k = 1 first) - 2^-127 = 2^-127, a denormal sum, becomes +0"},
      {{std::ldexp(1.0f, -63), tiny}, {std::ldexp(1.0f, -63), tiny}, 0x00800000u,
       "a flushed sum goes on from zero: 0 + 2^-126 (kept, 2^-140 + 2^-126 would be 0x00800200)"},
      {{std::ldexp(1.0f, -63)}, {std::ldexp(1.0f, -63)}, 0x00800000u, "2^-126, the smallest normal, stays"},
  };
  for (const Kernel kernel : {Kernel::kFma, Kernel::kAvx512Bf16}) {
    if (!kernel_available(kernel)) continue;
    for (const Flush& f : cases) {
      const int64_t K = static_cast<int64_t>(f.a.size());
      float c = -1.0f;
      gemm(&c, 1, Operand{f.a.data(), kFloat32, K, 1}, Operand{f.b.data(), kFloat32, 1, 1}, 1, 1, K, kernel);
      EXPECT_EQ(std::bit_cast<uint32_t>(c), f.want) << f.what << " (" << kernel_name(kernel) << ")";
    }
  }
}

// The FMA kernel flushes its sums only when the operands' exponents allow a denormal sum: a
// product of ordinary values never flushes, one with small enough values does (and the cases
// above, run through gemm, give the flushed bits).
TEST(Bf16Gemm, OnlyOperandsThatCanSumToADenormalAreFlushed) {
  const std::vector<float> ordinary = random_values(12, 7);  // (3, 4) or (4, 3), standard normal
  const Operand a{ordinary.data(), kFloat32, 4, 1}, b{ordinary.data(), kFloat32, 3, 1};
  EXPECT_FALSE(sums_may_underflow(a, b, 3, 3, 4));
  std::vector<float> small = ordinary;
  small[5] = std::ldexp(1.0f, -60);  // products near 2^-64: their last bit (2^-78 or so) is still normal
  EXPECT_FALSE(sums_may_underflow(Operand{small.data(), kFloat32, 4, 1}, b, 3, 3, 4));
  small[5] = std::ldexp(1.0f, -115);  // products near 2^-119, their last bit far below 2^-126
  EXPECT_TRUE(sums_may_underflow(Operand{small.data(), kFloat32, 4, 1}, b, 3, 3, 4));
  small[5] = std::ldexp(1.0f, -130);  // a denormal input
  EXPECT_TRUE(sums_may_underflow(Operand{small.data(), kFloat32, 4, 1}, b, 3, 3, 4));
  const std::vector<float> zeros(12, 0.0f);  // nothing to sum
  EXPECT_FALSE(sums_may_underflow(Operand{zeros.data(), kFloat32, 4, 1}, b, 3, 3, 4));
  // transposed (column-major) and bfloat16 operands are read too
  const std::vector<BFloat16> small16 = rounded(small);
  EXPECT_TRUE(sums_may_underflow(Operand{small16.data(), kBFloat16, 1, 3}, b, 3, 3, 4));
}

TEST(Bf16Gemm, AnyThreadCountGivesTheSameBits) {
  const Case t{150, 300, 277, false, true};  // big enough to run on threads
  const std::vector<float> a = random_values(t.M * t.K, 5), b = random_values(t.K * t.N, 6);
  const int threads = get_num_threads();
  for (const Kernel kernel : {Kernel::kFma, best_kernel()}) {
    set_num_threads(1);
    const std::vector<float> one = run(t, a, b, kernel);
    set_num_threads(2);
    const std::vector<float> two = run(t, a, b, kernel);
    EXPECT_EQ(one, two) << kernel_name(kernel);
  }
  set_num_threads(threads);
}

// Special float32 bits: NaNs (quiet, signalling, with payloads), infinities, zeros, denormals
// (some round up to the smallest normal bfloat16), ties (to even, both ways), the largest float
// (rounds to infinity), the smallest normal; then ordinary values of many exponents.
const std::vector<uint32_t> kSpecialFloats = {0x7FC00000, 0xFFC00001, 0x7F800001, 0xFF8FFFFF, 0x7F800000,
                                              0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x807FFFFF,
                                              0x007F8000, 0x007F7FFF, 0x00408000, 0x3F808000, 0x3F818000,
                                              0xBF808001, 0x7F7FFFFF, 0x00800000, 0x80800000};
// Special bfloat16 bits, passed through as they are: NaN payloads, a denormal, infinity.
const std::vector<uint16_t> kSpecialBfloat16 = {0x7FC1, 0xFF81, 0x7F81, 0x0001, 0x807F, 0x7F80, 0x0080};

// n values, a quarter special, the rest normal times 2^e for e in [-120, 120].
std::vector<float> special_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    const uint32_t pick = gen() % 100;
    x = pick < 25 ? std::bit_cast<float>(kSpecialFloats[gen() % kSpecialFloats.size()])
                  : std::ldexp(normal(gen), static_cast<int>(gen() % 241) - 120);
  }
  return v;
}

// A (rows, cols) operand's elements, copied to a fresh buffer read at strides (2 cols + 3, 2):
// neither is 1, so the kernel packs the copy on its scalar path.
struct Spread {
  std::vector<float> f;
  std::vector<BFloat16> h;
  Operand op;
};
Spread spread(const Operand& m, int64_t rows, int64_t cols) {
  Spread s;
  const int64_t rs = 2 * cols + 3, cs = 2, n = rows * rs;
  if (m.dtype == kBFloat16) s.h.resize(static_cast<size_t>(n));
  else s.f.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t from = i * m.row_stride + j * m.col_stride, to = i * rs + j * cs;
      if (m.dtype == kBFloat16) s.h[to] = static_cast<const BFloat16*>(m.data)[from];
      else s.f[to] = static_cast<const float*>(m.data)[from];
    }
  s.op = {m.dtype == kBFloat16 ? static_cast<const void*>(s.h.data()) : s.f.data(), m.dtype, rs, cs};
  return s;
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) bits[i] = std::bit_cast<uint32_t>(v[i]);
  return bits;
}

// c of a @ b, and of the same elements read through spread copies: the same bits, NaNs included.
void expect_packing_agrees(const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, const std::string& what) {
  const Spread a2 = spread(a, M, K), b2 = spread(b, K, N);
  for (const Kernel kernel : {Kernel::kFma, Kernel::kAvx512Bf16}) {
    if (!kernel_available(kernel)) continue;
    std::vector<float> c(static_cast<size_t>(M * N), -1.0f), c2 = c;
    gemm(c.data(), N, a, b, M, N, K, kernel);
    gemm(c2.data(), N, a2.op, b2.op, M, N, K, kernel);
    EXPECT_EQ(bits_of(c), bits_of(c2)) << what << " " << kernel_name(kernel);
  }
}

TEST(Bf16Gemm, VectorPackingGivesTheScalarBitsOnSpecialValues) {
  const int64_t M = 37, N = 45, K = 67;  // none a multiple of 16, the tile or 2
  const std::vector<float> a = special_values(M * K, 11), b = special_values(K * N, 12);
  for (const bool at : {false, true})
    for (const bool bt : {false, true}) {
      const Case t{M, N, K, at, bt};
      expect_packing_agrees(operand_a(t, a.data(), kFloat32), operand_b(t, b.data(), kFloat32), M, N, K,
                            std::string("float32 a_t ") + (at ? "1" : "0") + " b_t " + (bt ? "1" : "0"));
    }
}

TEST(Bf16Gemm, VectorPackingPassesBfloat16BitsThrough) {
  const int64_t M = 29, N = 40, K = 35;
  std::vector<BFloat16> a = rounded(random_values(M * K, 13)), b = rounded(random_values(K * N, 14));
  for (size_t i = 0; i < a.size(); i += 5) a[i] = BFloat16::from_bits(kSpecialBfloat16[i % kSpecialBfloat16.size()]);
  for (size_t i = 0; i < b.size(); i += 7) b[i] = BFloat16::from_bits(kSpecialBfloat16[i % kSpecialBfloat16.size()]);
  for (const bool at : {false, true})
    for (const bool bt : {false, true}) {
      const Case t{M, N, K, at, bt};
      expect_packing_agrees(operand_a(t, a.data(), kBFloat16), operand_b(t, b.data(), kBFloat16), M, N, K,
                            std::string("bfloat16 a_t ") + (at ? "1" : "0") + " b_t " + (bt ? "1" : "0"));
    }
}

// A bfloat16 A with k contiguous and K even is read where it lies, whole row blocks at a time: the
// bits of the packed copy, for rows at an odd stride too (words 2 bytes off alignment), over one
// or several k-blocks, with M ending in a short block and a short tile (packed as before).
TEST(Bf16Gemm, ABfloat16MatrixReadUnpackedGivesThePackedBits) {
  for (const int64_t row_stride_extra : {0, 3}) {
    for (const Case& t : std::vector<Case>{{250, 40, 130, false, false}, {192, 70, 800, false, false}}) {
      const int64_t lda = t.K + row_stride_extra;
      std::vector<BFloat16> a = rounded(random_values(t.M * lda, 18));
      for (size_t i = 0; i < a.size(); i += 5) {
        a[i] = BFloat16::from_bits(kSpecialBfloat16[i % kSpecialBfloat16.size()]);
      }
      const std::vector<float> b = special_values(t.K * t.N, 19);
      expect_packing_agrees({a.data(), kBFloat16, lda, 1}, {b.data(), kFloat32, t.N, 1}, t.M, t.N, t.K,
                            "M " + std::to_string(t.M) + " K " + std::to_string(t.K) + " lda " + std::to_string(lda));
    }
  }
}

// A bias is the float32 add after the product, c[i][j] + bias[j] in the normal floating-point
// mode (denormal sums and biases kept, on either kernel: the FMA kernel flushes only its sums), on
// every case, with A float32 or bfloat16 (read unpacked where it can be), and for K = 0.
TEST(Bf16Gemm, ABiasIsTheFloat32AddAfterTheProduct) {
  std::vector<Kernel> kernels{Kernel::kFma};
  if (kernel_available(Kernel::kAvx512Bf16)) kernels.push_back(Kernel::kAvx512Bf16);
  std::vector<Case> cases = kCases;
  cases.push_back({2, 40, 0, false, false});
  for (const Case& t : cases) {
    std::vector<float> a = random_values(t.M * t.K, 20);
    const std::vector<float> b = random_values(t.K * t.N, 21);
    for (int64_t k = 0; k < t.K; ++k) a[t.a_transposed ? k * t.M : k] = 0.0f;  // row 0 of c: +0 + bias
    const std::vector<BFloat16> a16 = rounded(a);
    std::vector<float> bias = special_values(t.N, 22);
    if (t.N > 2) bias[1] = std::bit_cast<float>(0x00000003u), bias[2] = -0.0f;  // a denormal; a -0 (+0 + -0 = +0)
    for (const Kernel kernel : kernels) {
      for (const ScalarType a_dtype : {kFloat32, kBFloat16}) {
        const Operand oa = operand_a(t, a_dtype == kFloat32 ? static_cast<const void*>(a.data()) : a16.data(), a_dtype);
        const Operand ob = operand_b(t, b.data(), kFloat32);
        std::vector<float> product(static_cast<size_t>(t.M * t.N), -1.0f), with_bias = product;
        gemm(product.data(), t.N, oa, ob, t.M, t.N, t.K, kernel);
        gemm(with_bias.data(), t.N, oa, ob, t.M, t.N, t.K, kernel, bias.data());
        for (int64_t i = 0; i < t.M; ++i) {
          for (int64_t j = 0; j < t.N; ++j) {
            const float expected = product[i * t.N + j] + bias[j];
            ASSERT_EQ(std::bit_cast<uint32_t>(with_bias[i * t.N + j]), std::bit_cast<uint32_t>(expected))
                << kernel_name(kernel) << ", A " << dtype_name(a_dtype) << ", M " << t.M << " N " << t.N << " K "
                << t.K << ": element (" << i << ", " << j << ") " << with_bias[i * t.N + j] << " != " << expected;
          }
        }
      }
    }
  }
}

TEST(Bf16Gemm, ZeroStridesGiveTheBitsOfTheBroadcastCopy) {
  const int64_t M = 30, N = 50, K = 41;
  const std::vector<float> row = random_values(K, 15), col = random_values(M, 16), b = random_values(K * N, 17);
  const Operand bm{b.data(), kFloat32, N, 1};
  expect_packing_agrees({row.data(), kFloat32, 0, 1}, bm, M, N, K, "every row of A the same");
  expect_packing_agrees({col.data(), kFloat32, 1, 0}, bm, M, N, K, "every column of A the same");
  expect_packing_agrees({col.data(), kFloat32, 1, 0}, {row.data(), kFloat32, 1, 0}, M, N, K,
                        "every column of B the same");
}

}  // namespace
}  // namespace tg::kernels::bf16_gemm
