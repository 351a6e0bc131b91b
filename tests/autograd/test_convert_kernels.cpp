// tests/autograd/test_convert_kernels.cpp — the vectorised float32 -> bfloat16 loop
// (autograd/kernels/convert_kernels.h) against its oracle, BFloat16's constructor (dtype.h):
//   * every copy the CPU runs (portable, AVX2, AVX-512), bit for bit, on a sweep through all 2^32
//     float32 bit patterns (every sign and exponent, so ties, NaNs with any payload, infinities,
//     denormals and the values that round up to inf) and on lengths that end mid-vector;
//   * through copy_values: a contiguous and a strided (transposed, head-split) float32 tensor's
//     .to(kBFloat16) and copy_ into a bfloat16 view give the oracle's bits with the fast kernels
//     on and off;
//   * copy_values' tiled path for transposes: clone of a transposed view, and copy_ into one, of
//     every dtype and of sizes that end mid-tile, element for element;
//   * strided loops split over threads by rows (for_rows_in_parallel, loops.h): a broadcast add,
//     a strided unary op and strided copies large enough to split, element for element against
//     the values read one by one, on 1 and 2 threads.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/convert_kernels.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"

namespace tg {
namespace {

namespace K = convert_kernels;

std::vector<K::Isa> isas_here() {
  std::vector<K::Isa> out{K::Isa::kPortable};
  for (K::Isa isa : {K::Isa::kAvx2, K::Isa::kAvx512})
    if (kernels::isa_available(isa)) out.push_back(isa);
  return out;
}

// Bit patterns: a step through all 2^32 that is prime (so every low-bit pattern is met), plus
// the rounding boundaries of a few values and the special ones.
std::vector<float> sweep_inputs() {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (uint32_t base : {0x3F800000u, 0x00010000u, 0x7F7F0000u, 0xC0490000u, 0x7F800000u, 0x80000000u}) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
      xs.push_back(std::bit_cast<float>(base | low));
    xs.push_back(std::bit_cast<float>((base | 0x10000u) | 0x8000u));  // a tie with an odd low bit
  }
  return xs;
}

TEST(ConvertKernels, EveryCopyRoundsAsBFloat16BitForBit) {
  const std::vector<float> xs = sweep_inputs();
  std::vector<uint16_t> expected(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) expected[i] = BFloat16(xs[i]).bits;
  for (K::Isa isa : isas_here()) {
    for (int64_t n : {int64_t(xs.size()), int64_t(1), int64_t(15), int64_t(17), int64_t(33)}) {
      std::vector<BFloat16> out(static_cast<size_t>(n) + 1, BFloat16::from_bits(0x1234));
      K::round_to_bf16(out.data(), xs.data(), n, isa);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(out[i].bits, expected[i]) << kernels::isa_name(isa) << " n=" << n << " at " << i << ": bits 0x"
                                             << std::hex << std::bit_cast<uint32_t>(xs[i]);
      EXPECT_EQ(out[n].bits, 0x1234) << kernels::isa_name(isa) << ": wrote past n=" << n;
    }
  }
}

// t.to(kBFloat16) element by element through BFloat16's constructor.
std::vector<uint16_t> oracle_bits(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(BFloat16(c.data_ptr<float>()[i]).bits);
  return out;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(c.data_ptr<BFloat16>()[i].bits);
  return out;
}

TEST(ConvertKernels, ContiguousAndStridedTensorsConvertAsTheOracleOnBothPaths) {
  manual_seed(3);
  Tensor x = randn({3, 37, 4, 10}) * 1e3;  // (B, T, NH, hs), odd sizes
  x.data_ptr<float>()[5] = std::bit_cast<float>(0x7FC00001u);  // a NaN with a payload
  const Tensor heads = x.transpose(1, 2);                // (B, NH, T, hs): rows of hs in memory
  const Tensor columns = x.transpose(-1, -2);            // not a single unit-stride row
  for (bool fast : {true, false}) {
    FastKernelsGuard mode(fast);
    for (const Tensor& t : {x, heads, columns}) {
      EXPECT_EQ(bits_of(t.to(kBFloat16)), oracle_bits(t)) << "fast=" << fast << " shape " << shape_str(t.sizes());
      Tensor dst = empty({t.size(0), t.size(2), t.size(1), t.size(3)}, kBFloat16).transpose(1, 2);  // strided
      dst.copy_(t);
      EXPECT_EQ(bits_of(dst), oracle_bits(t)) << "copy_ fast=" << fast << " shape " << shape_str(t.sizes());
    }
  }
}

// Element (i0, .., in) of t, read through its strides, as double (every dtype here converts).
double element(const Tensor& t, const Shape& index) { return t.at(index); }

TEST(CopyValues, TransposedCopiesGoThroughTilesElementForElement) {
  manual_seed(5);
  const Tensor base = randn({3, 37, 19}) * 100;
  for (ScalarType dt : {kFloat32, kFloat64, kInt64, kBool, kBFloat16}) {
    const Tensor t = base.to(dt);
    const Tensor transposed = t.transpose(1, 2);  // (3, 19, 37), the last two dims swapped
    const Tensor cloned = transposed.clone();     // into contiguous memory
    ASSERT_TRUE(cloned.is_contiguous());
    Tensor into = empty({3, 37, 19}, dt).transpose(1, 2);  // a contiguous source copied into a transposed view
    into.copy_(cloned);
    const Tensor flat = t.transpose(0, 1).clone();  // (37, 3, 19): dims other than the last two
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t i = 0; i < 19; ++i)
        for (int64_t j = 0; j < 37; ++j) {
          const double want = element(t, {a, j, i});
          ASSERT_EQ(element(cloned, {a, i, j}), want) << dtype_name(dt) << " clone at " << a << "," << i << "," << j;
          ASSERT_EQ(element(into, {a, i, j}), want) << dtype_name(dt) << " copy_ at " << a << "," << i << "," << j;
          ASSERT_EQ(element(flat, {j, a, i}), want) << dtype_name(dt) << " other dims at " << a << "," << i << "," << j;
        }
  }
}

TEST(CopyValues, StridedLoopsSplitByRowsGiveEveryElement) {
  manual_seed(6);
  const Tensor x = randn({5, 61, 7, 53});         // 113,155 elements: enough to split
  const Tensor heads = x.transpose(1, 2);           // (5, 7, 61, 53): rows of 53 in memory
  const Tensor bias = randn({53});
  const Tensor columns = x.transpose(-1, -2);       // rows not in memory
  const int threads = get_num_threads();
  for (int n : {1, 2}) {
    set_num_threads(n);
    const Tensor sum = heads + bias;                // a broadcast binary op over a strided input
    const Tensor negated = -columns;                // a unary op over a strided input
    const Tensor copied = heads.contiguous();       // a strided copy
    Tensor into = empty({5, 7, 61, 53});
    into.transpose(1, 2).copy_(x);                  // a copy into a strided view
    for (int64_t a = 0; a < 5; a += 2)
      for (int64_t t = 0; t < 61; t += 3)
        for (int64_t h = 0; h < 7; ++h)
          for (int64_t c = 0; c < 53; c += 4) {
            const double v = x.at({a, t, h, c});
            ASSERT_EQ(sum.at({a, h, t, c}), static_cast<float>(v + bias.at({c}))) << n << " threads";
            ASSERT_EQ(negated.at({a, t, c, h}), -v) << n << " threads";
            ASSERT_EQ(copied.at({a, h, t, c}), v) << n << " threads";
            ASSERT_EQ(into.at({a, h, t, c}), v) << n << " threads";
          }
  }
  set_num_threads(threads);
}

}  // namespace
}  // namespace tg
