// tests/autograd/test_softmax_kernels.cpp — the float32 rows of softmax, log_softmax,
// masked_scaled_softmax and cross_entropy (autograd/kernels/softmax_kernels.h) against their plain
// twins (nn_loops.h: std::exp, sums from the left):
//
//   * fast vs twin, |fast - twin| <= atol + rtol * |twin|, on rows of 1, 3, 7, 8, 9, 15, 16, 17,
//     64, 65 and 1000 elements (shorter than a vector, one lane round, odd tails, long), with
//     normal values, -inf entries, rows all -inf, large magnitudes and nearly equal values;
//     forward and backward, each printing its worst error on a "[ worst    ]" line;
//   * the portable (SSE2 on x86-64) and AVX2 copies give the same bits;
//   * the row's address changes no bit, and a row followed by -inf entries (exp 0) has the
//     bits of the row alone: what keeps masked_scaled_softmax equal to softmax of masked scores;
//   * masked_scaled_softmax (causal, with query offsets) against the plain rows;
//   * the ops take the fast rows for float32 along the last dim, with the same bits on 1 and
//     2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/kernels/softmax_kernels.h"
#include "autograd/runtime/parallel.h"
#include "test_util.h"

namespace tg {
namespace {

namespace S = softmax_kernels;
using test::same_bytes;

constexpr float kInfF = std::numeric_limits<float>::infinity();
const std::vector<int64_t> kRowLengths = {1, 3, 7, 8, 9, 15, 16, 17, 64, 65, 1000};

// The kinds of rows the tests run on.
enum class Values { kNormal, kSomeNegInf, kAllNegInf, kLarge, kNearlyEqual };
const std::vector<Values> kAllValues = {Values::kNormal, Values::kSomeNegInf, Values::kAllNegInf, Values::kLarge,
                                        Values::kNearlyEqual};
constexpr int kRowsEach = 20;  // rows of each length and kind in the comparisons with the twins

const char* values_name(Values v) {
  switch (v) {
    case Values::kNormal: return "normal";
    case Values::kSomeNegInf: return "some -inf";
    case Values::kAllNegInf: return "all -inf";
    case Values::kLarge: return "large";
    case Values::kNearlyEqual: return "nearly equal";
  }
  return "?";
}

// A row of n values of the kind: normal of scale 4; a quarter of them -inf (never all);
// all -inf; magnitudes up to 1e4 with one near 1e30; 100 + tiny steps.
std::vector<float> make_row(int64_t n, Values kind, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  if (kind == Values::kSomeNegInf) {
    std::bernoulli_distribution coin(0.25);
    for (size_t j = 1; j < x.size(); ++j)
      if (coin(rng)) x[j] = -kInfF;
  } else if (kind == Values::kAllNegInf) {
    std::fill(x.begin(), x.end(), -kInfF);
  } else if (kind == Values::kLarge) {
    for (float& v : x) v *= 2500.0f;
    x[x.size() / 2] = -1e30f;
    if (n > 2) x[1] = 9.9e29f;
  } else if (kind == Values::kNearlyEqual) {
    for (float& v : x) v = 100.0f + v * 1e-5f;
  }
  return x;
}

// A gradient of n values, normal of scale 2.
std::vector<float> make_grad(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> g(static_cast<size_t>(n));
  for (float& v : g) v = normal(rng);
  return g;
}

// The instruction sets this CPU can run.
std::vector<S::Isa> isas() {
  std::vector<S::Isa> out{S::Isa::kPortable};
  if (kernels::isa_available(S::Isa::kAvx2)) out.push_back(S::Isa::kAvx2);
  if (kernels::isa_available(S::Isa::kAvx512)) out.push_back(S::Isa::kAvx512);
  return out;
}
const char* isa_label(S::Isa isa) { return kernels::isa_name(isa); }

// The worst |fast - twin| over many comparisons, and its bound atol + rtol * |twin|.
struct Closeness {
  std::string what;
  double atol, rtol;
  double worst = 0, worst_ulps = 0;  // worst absolute error, and worst in float ulps of the twin
  int failures = 0;

  // fast (n) against twin (n): NaN matches NaN, an inf the same inf.
  void check(const std::vector<float>& fast, const std::vector<float>& twin, const std::string& where) {
    for (size_t j = 0; j < twin.size(); ++j) {
      const double f = fast[j], t = twin[j];
      if (std::isnan(t) || std::isinf(t) || std::isnan(f) || std::isinf(f)) {
        const bool same = (std::isnan(f) && std::isnan(t)) || f == t;
        if (!same && failures++ < 10) ADD_FAILURE() << what << ", " << where << ", element " << j << ": " << f << " vs twin " << t;
        continue;
      }
      const double err = std::abs(f - t);
      const double ulp = std::max(static_cast<double>(std::nextafter(std::abs(twin[j]), kInfF) - std::abs(twin[j])),
                                  static_cast<double>(std::numeric_limits<float>::denorm_min()));
      worst = std::max(worst, err);
      worst_ulps = std::max(worst_ulps, err / ulp);
      if (!(err <= atol + rtol * std::abs(t)) && failures++ < 10) {
        ADD_FAILURE() << what << ", " << where << ", element " << j << ": " << f << " vs twin " << t << ", |diff| "
                      << err << " > " << atol << " + " << rtol << " * |twin|";
      }
    }
  }
  ~Closeness() { std::cout << "[ worst    ] " << what << ": |fast - twin| " << worst << " (" << worst_ulps << " ulp)\n"; }
};

std::string where(int64_t n, Values kind, S::Isa isa) {
  return std::string("row of ") + std::to_string(n) + " (" + values_name(kind) + ", " + isa_label(isa) + ")";
}

// --- fast rows vs the plain twins ----------------------------------------------------------------

// A forward row, fast(y, x, n, isa) against twin(y, x, n), on kRowsEach rows of each length
// and kind.
template <class Fast, class Twin>
void compare_forward_rows(Closeness& c, uint32_t seed, Fast fast_row, Twin twin_row) {
  std::mt19937 rng(seed);
  for (int64_t n : kRowLengths) {
    for (int rep = 0; rep < kRowsEach * static_cast<int>(kAllValues.size()); ++rep) {
      const Values kind = kAllValues[static_cast<size_t>(rep) % kAllValues.size()];
      const std::vector<float> x = make_row(n, kind, rng);
      std::vector<float> twin(x.size()), fast(x.size());
      twin_row(twin.data(), x.data(), n);
      for (S::Isa isa : isas()) {
        fast_row(fast.data(), x.data(), n, isa);
        c.check(fast, twin, where(n, kind, isa));
      }
    }
  }
}

// y = e * (1/s): vec_math's exp (<= 1 ulp) against std::exp (<= 1 ulp), then the same product.
TEST(SoftmaxKernels, SoftmaxRowMatchesPlainTwin) {
  Closeness c{"softmax row", 0, 4.8e-7};
  compare_forward_rows(c, 1, [](float* y, const float* x, int64_t n, S::Isa isa) { S::softmax_row(y, x, n, isa); },
                       [](float* y, const float* x, int64_t n) { nn_loops::softmax_row_reference(y, x, n); });
}

// y = x - lse: the twin's lse and ours differ by the sums' relative error (a few 1e-8), absolute.
TEST(SoftmaxKernels, LogSoftmaxRowMatchesPlainTwin) {
  Closeness c{"log_softmax row", 2e-7, 1.2e-7};
  compare_forward_rows(c, 2, [](float* y, const float* x, int64_t n, S::Isa isa) { S::log_softmax_row(y, x, n, isa); },
                       [](float* y, const float* x, int64_t n) {
                         nn_loops::softmax_forward_reference<float>(y, x, 1, n, 1, /*log_space=*/true);
                       });
}

// From the same y and g: the sum of the exact products in double, only in another order, so
// the results differ by at most the float rounding of a few double ulps.
TEST(SoftmaxKernels, SoftmaxBackwardRowMatchesPlainTwin) {
  Closeness c{"softmax backward row", 1e-12, 1.2e-7};
  std::mt19937 rng(3);
  for (int64_t n : kRowLengths) {
    for (int rep = 0; rep < kRowsEach * static_cast<int>(kAllValues.size()); ++rep) {
      const Values kind = kAllValues[static_cast<size_t>(rep) % kAllValues.size()];
      std::vector<float> y = make_row(n, kind, rng);
      nn_loops::softmax_row_reference(y.data(), y.data(), n);
      const std::vector<float> g = make_grad(n, rng);
      for (float divisor : {1.0f, 5.656854f}) {
        std::vector<float> twin(y.size()), fast(y.size());
        nn_loops::softmax_backward_row_reference(twin.data(), g.data(), y.data(), n, divisor);
        for (S::Isa isa : isas()) {
          S::softmax_backward_row(fast.data(), g.data(), y.data(), n, divisor, isa);
          c.check(fast, twin, where(n, kind, isa) + " divisor " + std::to_string(divisor));
        }
      }
    }
  }
}

// lse against the plain cross_entropy_forward's, and the row's gradient against the plain
// cross_entropy_backward (exp in double), each from its own lse.
TEST(SoftmaxKernels, CrossEntropyRowsMatchPlainTwin) {
  Closeness lse_close{"cross_entropy lse", 2e-7, 1.2e-7};
  Closeness grad_close{"cross_entropy backward row", 1e-9, 6e-7};
  std::mt19937 rng(4);
  for (int64_t n : kRowLengths) {
    for (int rep = 0; rep < kRowsEach * 4; ++rep) {
      const Values kind = std::vector<Values>{Values::kNormal, Values::kSomeNegInf, Values::kLarge,
                                              Values::kNearlyEqual}[static_cast<size_t>(rep % 4)];
      const std::vector<float> x = make_row(n, kind, rng);
      const int64_t target = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      if (std::isinf(x[static_cast<size_t>(target)])) continue;  // a -inf target's loss is inf
      const float g = 0.75f;
      float loss = 0;
      double lse_twin = 0;
      nn_loops::cross_entropy_forward_reference<float>(&loss, &lse_twin, x.data(), &target, 1, n);
      std::vector<float> twin(x.size()), fast(x.size()), scratch(x.size());
      nn_loops::cross_entropy_backward_reference<float>(twin.data(), &g, x.data(), &lse_twin, &target, 1, n);
      for (S::Isa isa : isas()) {
        const double lse = S::logsumexp_row(scratch.data(), x.data(), n, isa);
        lse_close.check({static_cast<float>(lse)}, {static_cast<float>(lse_twin)}, where(n, kind, isa));
        S::cross_entropy_backward_row(fast.data(), x.data(), lse, target, g, n, isa);
        grad_close.check(fast, twin, where(n, kind, isa) + " target " + std::to_string(target));
      }
    }
  }
}

// --- bits that must not move ----------------------------------------------------------------------

// a == b bit for bit, or both NaN.
::testing::AssertionResult same_floats(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  for (size_t j = 0; j < a.size(); ++j) {
    if (std::bit_cast<uint32_t>(a[j]) != std::bit_cast<uint32_t>(b[j]) && !(std::isnan(a[j]) && std::isnan(b[j]))) {
      return ::testing::AssertionFailure() << what << ", element " << j << ": " << a[j] << " vs " << b[j];
    }
  }
  return ::testing::AssertionSuccess();
}

// Every row function on x (n) and g (n): their outputs one after another.
std::vector<float> all_rows(const float* x, const float* g, int64_t n, S::Isa isa) {
  std::vector<float> y(static_cast<size_t>(n)), lp(y.size()), dx(y.size()), dx1(y.size()), dce(y.size());
  std::vector<float> e(y.size()), quotient(y.size());
  const double inv = S::softmax_row(y.data(), x, n, isa);
  S::log_softmax_row(lp.data(), x, n, isa);
  S::softmax_backward_row(dx.data(), g, y.data(), n, 5.656854f, isa);
  S::softmax_backward_row(dx1.data(), g, y.data(), n, 1.0f, isa);
  S::divide_row(quotient.data(), x, n, 5.656854f, isa);
  const double lse = S::logsumexp_row(e.data(), x, n, isa);
  S::cross_entropy_backward_row(dce.data(), x, lse, n / 2, 0.25, n, isa);
  std::vector<float> out = y;
  for (const auto* part : {&lp, &dx, &dx1, &dce, &quotient}) out.insert(out.end(), part->begin(), part->end());
  out.push_back(static_cast<float>(inv));
  out.push_back(static_cast<float>(lse));
  return out;
}

// Every copy this CPU runs against the portable one: the AVX2 loops, and on AVX-512 softmax_row's
// own intrinsics loop, whose last n % 16 keys are one masked step (so every length from 0 to 40,
// and around 64, 128 and 256), its 1/s to the last bit of the double too.
TEST(SoftmaxKernels, EveryCopyGivesTheSameBits) {
  if (isas().size() == 1) GTEST_SKIP() << "this CPU has only the portable copy";
  std::vector<int64_t> lengths = {63, 64, 65, 127, 128, 129, 255, 256, 257, 1000};
  for (int64_t n = 0; n <= 40; ++n) lengths.push_back(n);
  std::mt19937 rng(5);
  for (int64_t n : lengths) {
    for (Values kind : kAllValues) {
      if (n == 0 && kind != Values::kNormal) continue;
      const std::vector<float> x = n == 0 ? std::vector<float>() : make_row(n, kind, rng), g = make_grad(n, rng);
      std::vector<float> y(x.size());
      const double inv = S::softmax_row(y.data(), x.data(), n, S::Isa::kPortable);
      for (S::Isa isa : isas()) {
        if (isa == S::Isa::kPortable) continue;
        if (n > 0) {
          EXPECT_TRUE(same_floats(all_rows(x.data(), g.data(), n, S::Isa::kPortable),
                                  all_rows(x.data(), g.data(), n, isa), where(n, kind, isa)));
        }
        std::vector<float> y_isa(x.size(), 7.0f);
        const double inv_isa = S::softmax_row(y_isa.data(), x.data(), n, isa);
        EXPECT_TRUE(std::bit_cast<uint64_t>(inv) == std::bit_cast<uint64_t>(inv_isa) ||
                    (std::isnan(inv) && std::isnan(inv_isa)))
            << where(n, kind, isa) << ": 1/s " << inv << " vs " << inv_isa;
        EXPECT_TRUE(same_floats(y_isa, y, where(n, kind, isa) + " in place"));
      }
    }
  }
}

// The AVX-512 rows read and write only their n entries (masked loads and stores past them).
TEST(SoftmaxKernels, TheAvx512RowTouchesNothingPastItsEnd) {
  if (!kernels::isa_available(S::Isa::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512";
  std::mt19937 rng(8);
  for (int64_t n : {1, 5, 15, 16, 17, 33}) {
    std::vector<float> x = make_row(n, Values::kNormal, rng);
    x.resize(static_cast<size_t>(n) + 16, std::numeric_limits<float>::quiet_NaN());  // NaN past n: read, it would show
    std::vector<float> y(x.size(), 3.0f);
    const double inv = S::softmax_row(y.data(), x.data(), n, S::Isa::kAvx512);
    EXPECT_FALSE(std::isnan(inv)) << "row of " << n;
    for (size_t j = static_cast<size_t>(n); j < y.size(); ++j) EXPECT_EQ(y[j], 3.0f) << "row of " << n << ", element " << j;
    std::vector<float> g = make_grad(n, rng), dx(x.size(), 3.0f);
    g.resize(x.size(), std::numeric_limits<float>::quiet_NaN());
    y.resize(static_cast<size_t>(n));
    y.resize(x.size(), std::numeric_limits<float>::quiet_NaN());
    S::softmax_backward_row(dx.data(), g.data(), y.data(), n, 2.0f, S::Isa::kAvx512);
    for (size_t j = 0; j < dx.size(); ++j) {
      if (j < static_cast<size_t>(n)) EXPECT_FALSE(std::isnan(dx[j])) << "backward, row of " << n << ", element " << j;
      else EXPECT_EQ(dx[j], 3.0f) << "backward, row of " << n << ", element " << j;
    }
    S::softmax_row(x.data(), x.data(), n, S::Isa::kAvx512);  // in place
    for (size_t j = static_cast<size_t>(n); j < x.size(); ++j) EXPECT_TRUE(std::isnan(x[j])) << "row of " << n;
  }
}

// softmax_rows: each row the bits of softmax_row on it (1/s too), on every copy, for any count of
// rows (the AVX-512 copy takes a few at a time), rows of every kind and of lengths 0 to 70 and
// 1000, in or out of place; nothing past a row's length is written.
TEST(SoftmaxKernels, SoftmaxRowsGiveEachRowTheBitsOfSoftmaxRow) {
  std::mt19937 rng(9);
  const int64_t stride = 1000 + 3;
  for (const S::Isa isa : isas()) {
    for (const int64_t rows : {1, 3, 4, 5, 11}) {
      std::vector<int64_t> lengths(static_cast<size_t>(rows));
      std::vector<float> x(static_cast<size_t>(rows * stride), std::numeric_limits<float>::quiet_NaN());
      for (int64_t r = 0; r < rows; ++r) {
        lengths[r] = r == rows - 1 && rows > 4 ? 1000 : static_cast<int64_t>(rng() % 71);
        const Values kind = kAllValues[r % kAllValues.size()];
        const std::vector<float> row = make_row(std::max<int64_t>(lengths[r], 1), kind, rng);
        std::copy(row.begin(), row.begin() + lengths[r], x.begin() + r * stride);
      }
      std::vector<float> y(x.size(), 3.0f), in_place = x;
      std::vector<double> inv(static_cast<size_t>(rows)), inv_in_place(static_cast<size_t>(rows));
      S::softmax_rows(inv.data(), y.data(), stride, x.data(), stride, lengths.data(), rows, isa);
      S::softmax_rows(inv_in_place.data(), in_place.data(), stride, in_place.data(), stride, lengths.data(), rows, isa);
      for (int64_t r = 0; r < rows; ++r) {
        const std::string what = std::string(isa_label(isa)) + ", row " + std::to_string(r) + " of " +
                                 std::to_string(rows) + ", length " + std::to_string(lengths[r]);
        std::vector<float> one(static_cast<size_t>(lengths[r]));
        const double inv_one = S::softmax_row(one.data(), x.data() + r * stride, lengths[r], isa);
        const auto row_of = [&](const std::vector<float>& v) {
          return std::vector<float>(v.begin() + r * stride, v.begin() + r * stride + lengths[r]);
        };
        EXPECT_TRUE(same_floats(row_of(y), one, what));
        EXPECT_TRUE(same_floats(row_of(in_place), one, what + ", in place"));
        EXPECT_EQ(std::bit_cast<uint64_t>(inv[r]), std::bit_cast<uint64_t>(inv_one)) << what;
        EXPECT_EQ(std::bit_cast<uint64_t>(inv_in_place[r]), std::bit_cast<uint64_t>(inv_one)) << what;
        for (int64_t j = lengths[r]; j < stride; ++j) {
          ASSERT_EQ(y[r * stride + j], 3.0f) << what << ", element " << j;
          ASSERT_TRUE(std::isnan(in_place[r * stride + j])) << what << ", element " << j;
        }
      }
    }
  }
}

TEST(SoftmaxKernels, TheRowsAddressChangesNoBit) {
  // the same row at each float offset in a buffer, so every alignment against the vectors
  std::mt19937 rng(6);
  for (int64_t n : {17, 65, 1000}) {
    const std::vector<float> x = make_row(n, Values::kNormal, rng), g = make_grad(n, rng);
    const std::vector<float> at_start = all_rows(x.data(), g.data(), n, S::best_isa());
    for (size_t offset = 1; offset < 16; ++offset) {
      std::vector<float> bx(offset + x.size()), bg(offset + g.size());
      std::copy(x.begin(), x.end(), bx.begin() + static_cast<std::ptrdiff_t>(offset));
      std::copy(g.begin(), g.end(), bg.begin() + static_cast<std::ptrdiff_t>(offset));
      EXPECT_TRUE(same_floats(all_rows(bx.data() + offset, bg.data() + offset, n, S::best_isa()), at_start,
                              "row of " + std::to_string(n) + " at offset " + std::to_string(offset)));
    }
  }
}

TEST(SoftmaxKernels, TrailingNegInfEntriesChangeNoBitOfTheRest) {
  // softmax of (x, -inf, ..., -inf) is (softmax(x), 0, ..., 0), bit for bit, and its backward
  // (where y is 0) is the backward of x's part: the lanes sums add exact zeros
  std::mt19937 rng(7);
  for (int64_t n : {1, 5, 16, 17, 40}) {
    for (int64_t pad : {1, 7, 15, 16, 33}) {
      const std::vector<float> x = make_row(n, Values::kSomeNegInf, rng), g = make_grad(n + pad, rng);
      std::vector<float> padded = x;
      padded.resize(static_cast<size_t>(n + pad), -kInfF);
      std::vector<float> y(x.size()), yp(padded.size()), dx(x.size()), dxp(padded.size());
      S::softmax_row(y.data(), x.data(), n);
      S::softmax_row(yp.data(), padded.data(), n + pad);
      const std::string what = "row of " + std::to_string(n) + " and " + std::to_string(pad) + " -inf";
      EXPECT_TRUE(same_floats(std::vector<float>(yp.begin(), yp.begin() + n), y, what));
      EXPECT_TRUE(same_floats(std::vector<float>(yp.begin() + n, yp.end()), std::vector<float>(pad, 0.0f), what));
      S::softmax_backward_row(dx.data(), g.data(), y.data(), n, 2.0f);
      S::softmax_backward_row(dxp.data(), g.data(), yp.data(), n + pad, 2.0f);
      EXPECT_TRUE(same_floats(std::vector<float>(dxp.begin(), dxp.begin() + n), dx, what + " backward"));
    }
  }
}

// --- masked_scaled_softmax, causal with query offsets ----------------------------------------------

TEST(SoftmaxKernels, CausalMaskedScaledSoftmaxMatchesPlainRows) {
  // query i after `offset` positions sees keys j <= offset + i: the plain row of their scores
  // / sqrt(d_k), zeros after; backward from the op's own weights, plain row, zeros after
  Closeness fwd{"masked_scaled_softmax causal forward", 0, 4.8e-7};
  Closeness bwd{"masked_scaled_softmax causal backward", 1e-12, 1.2e-7};
  const int64_t d_k = 32;
  const float scale = std::sqrt(static_cast<float>(d_k));
  for (int64_t T_k : kRowLengths) {
    const int64_t T_q = std::min<int64_t>(T_k, 9);
    for (int64_t offset : {T_k - T_q, int64_t{0}, int64_t{-2}, T_k / 3}) {
      const Tensor scores = test::leaf(test::normal_tensor({2, T_q, T_k}, static_cast<uint32_t>(T_k + offset), kFloat32) * 8.0);
      const Tensor g = test::normal_tensor({2, T_q, T_k}, 99, kFloat32);
      Tensor y = masked_scaled_softmax(scores, Tensor(), d_k, {.causal = true, .query_offset = offset});
      y.backward(g);
      const std::vector<float> xs = scores.tolist<float>(), ys = y.tolist<float>(), gs = g.tolist<float>(),
                               dxs = scores.grad().tolist<float>();
      for (int64_t r = 0; r < 2 * T_q; ++r) {
        const int64_t visible = std::clamp(std::min(offset, T_k) + r % T_q + 1, int64_t{0}, T_k);
        const size_t at = static_cast<size_t>(r * T_k);
        std::vector<float> twin(static_cast<size_t>(T_k), 0.0f), dtwin(twin.size(), 0.0f);
        for (int64_t j = 0; j < visible; ++j) twin[static_cast<size_t>(j)] = xs[at + static_cast<size_t>(j)] / scale;
        if (visible > 0) nn_loops::softmax_row_reference(twin.data(), twin.data(), visible);
        const std::string what = "T_k " + std::to_string(T_k) + " query_offset " + std::to_string(offset) + " row " +
                                 std::to_string(r);
        fwd.check(std::vector<float>(ys.begin() + static_cast<std::ptrdiff_t>(at), ys.begin() + static_cast<std::ptrdiff_t>(at + twin.size())),
                  twin, what);
        nn_loops::softmax_backward_row_reference(dtwin.data(), gs.data() + at, ys.data() + at, visible, scale);
        bwd.check(std::vector<float>(dxs.begin() + static_cast<std::ptrdiff_t>(at), dxs.begin() + static_cast<std::ptrdiff_t>(at + dtwin.size())),
                  dtwin, what);
      }
    }
  }
}

// --- through the ops --------------------------------------------------------------------------------

TEST(SoftmaxKernels, OpsTakeTheFastRowsAlongTheLastDimOfFloat32) {
  const FastKernelsGuard fast(true);  // the fused op, whatever TG_FAST_KERNELS says
  std::mt19937 rng(8);
  const int64_t R = 6, N = 65;
  std::vector<float> x(static_cast<size_t>(R * N));
  for (int64_t r = 0; r < R; ++r) {
    const std::vector<float> row = make_row(N, r % 2 ? Values::kSomeNegInf : Values::kNormal, rng);
    std::copy(row.begin(), row.end(), x.begin() + r * N);
  }
  const Tensor xt = from_vector(std::vector<double>(x.begin(), x.end()), {R, N}, kFloat32);
  std::vector<float> y(x.size()), lp(x.size());
  for (int64_t r = 0; r < R; ++r) {
    S::softmax_row(y.data() + r * N, x.data() + r * N, N);
    S::log_softmax_row(lp.data() + r * N, x.data() + r * N, N);
  }
  EXPECT_TRUE(same_floats(softmax(xt, -1).tolist<float>(), y, "softmax"));
  EXPECT_TRUE(same_floats(log_softmax(xt, 1).tolist<float>(), lp, "log_softmax"));
  // along dim 0 the plain loop runs
  std::vector<float> twin(x.size());
  nn_loops::softmax_forward_reference<float>(twin.data(), x.data(), 1, R, N, false);
  EXPECT_TRUE(same_floats(softmax(xt, 0).tolist<float>(), twin, "softmax along dim 0"));
}

TEST(SoftmaxKernels, SoftmaxLogSoftmaxAndCrossEntropySameBitsOnOneAndTwoThreads) {
  const int before = get_num_threads();
  const Tensor x = test::normal_tensor({300, 257}, 9, kFloat32) * 3.0, g = test::normal_tensor({300, 257}, 10, kFloat32);
  std::vector<int64_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37) % 257);
  const Tensor targets = from_vector(ids, {300});
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<Tensor> r;
    for (int op = 0; op < 3; ++op) {
      Tensor leaf = test::leaf(x);
      Tensor out = op == 0 ? softmax(leaf, -1) : op == 1 ? log_softmax(leaf, -1) : cross_entropy(leaf, targets);
      if (op == 2) out.backward();
      else out.backward(g);
      r.push_back(out.detach());
      r.push_back(leaf.grad());
    }
    results.push_back(r);
  }
  set_num_threads(before);
  for (size_t i = 0; i < results[0].size(); ++i) EXPECT_TRUE(same_bytes(results[1][i], results[0][i])) << "result " << i;
}

}  // namespace
}  // namespace tg
