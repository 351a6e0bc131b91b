// tests/autograd/test_row_kernels.cpp — the float32 row loops (autograd/kernels/row_kernels.h:
// layer_norm and rms_norm forward and backward, column sums) against their plain twins, the loops
// that accumulate in double (nn_loops::layer_norm_forward_reference / _backward, rms_norm's,
// tg::sum over dim 0); rms_norm's op runs the rows with the fast kernels on and the twin off.
//
//   * fast vs twin, |fast - twin| <= atol + rtol * |twin| elementwise, on rows of 1, 7, 8, 9,
//     17, 128 and 1000 columns and 1 to 130 rows, with and without weight and bias, on inputs
//     near zero, far from it (1000 + noise: the variance must not cancel) and large (1e4);
//     each prints its worst error on a "[ worst    ] line";
//   * the portable and AVX2 copies give the same bits, and so do 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "autograd/ops.h"
#include "autograd/ops/nn_loops.h"
#include "autograd/kernels/row_kernels.h"
#include "autograd/runtime/parallel.h"
#include "test_util.h"

namespace tg {
namespace {

namespace K = row_kernels;
using kernels::Isa;

std::vector<Isa> isas() {
  std::vector<Isa> out{Isa::kPortable};
  if (kernels::isa_available(Isa::kAvx2)) out.push_back(Isa::kAvx2);
  return out;
}
const char* isa_label(Isa isa) { return isa == Isa::kAvx2 ? "AVX2" : "portable"; }

std::vector<float> draws(int64_t n, uint32_t seed, double center, double scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(center, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(normal(rng));
  return v;
}

// |got - want| <= atol + rtol |want| everywhere; names the first failures, prints the worst.
void expect_close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, double atol,
                  double rtol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    if (!(err <= atol + rtol * std::abs(static_cast<double>(want[i]))) && ++failures <= 5) {
      ADD_FAILURE() << what << " at index " << i << ": fast " << got[i] << ", twin " << want[i] << ", |diff| " << err
                    << " > " << atol << " + " << rtol << " * |twin|";
    }
    worst = std::max(worst, err / (atol + rtol * std::abs(static_cast<double>(want[i]))));
  }
  std::cout << "[ worst    ] " << what << ": " << worst << " of the tolerance\n";
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  return true;
}

struct Case {
  int64_t R, C;
  double center, scale;  // of the input x
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t C : {1, 7, 8, 9, 17, 128, 1000})
    for (int64_t R : {1, 7, 65, 130})
      for (auto [center, scale] : {std::pair{0.0, 1.0}, {1000.0, 1.0}, {0.0, 1e4}}) out.push_back({R, C, center, scale});
  return out;
}

std::string name_of(const Case& c, const char* what) {
  return std::string(what) + " R " + std::to_string(c.R) + " C " + std::to_string(c.C) + " x ~ " +
         std::to_string(c.center) + " +- " + std::to_string(c.scale);
}

// Everything one layer_norm case reads and writes.
struct LayerNormRun {
  std::vector<float> y, mean, rstd, dx, dw, db;
};

LayerNormRun run_fast(const Case& c, const std::vector<float>& x, const std::vector<float>& g, const float* w,
                      const float* b, Isa isa) {
  LayerNormRun r{std::vector<float>(x.size()), std::vector<float>(c.R), std::vector<float>(c.R),
                 std::vector<float>(x.size()), std::vector<float>(c.C), std::vector<float>(c.C)};
  K::layer_norm_forward(r.y.data(), r.mean.data(), r.rstd.data(), x.data(), w, b, c.R, c.C, 1e-5, isa);
  K::layer_norm_backward(r.dx.data(), r.dw.data(), r.db.data(), g.data(), x.data(), w, r.mean.data(), r.rstd.data(),
                         c.R, c.C, isa);
  return r;
}

LayerNormRun run_twin(const Case& c, const std::vector<float>& x, const std::vector<float>& g, const float* w,
                      const float* b) {
  LayerNormRun r{std::vector<float>(x.size()), std::vector<float>(c.R), std::vector<float>(c.R),
                 std::vector<float>(x.size()), std::vector<float>(c.C), std::vector<float>(c.C)};
  nn_loops::layer_norm_forward_reference<float>(r.y.data(), r.mean.data(), r.rstd.data(), x.data(), w, b, c.R, c.C, 1e-5);
  nn_loops::layer_norm_backward_reference<float>(r.dx.data(), r.dw.data(), r.db.data(), g.data(), x.data(), w, r.mean.data(),
                                         r.rstd.data(), c.R, c.C);
  return r;
}

TEST(RowKernels, LayerNormMatchesDoubleTwinOnManyShapesAndScales) {
  for (const Case& c : cases()) {
    const int64_t n = c.R * c.C;
    const std::vector<float> x = draws(n, 1, c.center, c.scale), g = draws(n, 2, 0.0, 1.0);
    const std::vector<float> w = draws(c.C, 3, 1.0, 0.5), b = draws(c.C, 4, 0.0, 0.5);
    for (bool affine : {true, false}) {
      const float* pw = affine ? w.data() : nullptr;
      const float* pb = affine ? b.data() : nullptr;
      const LayerNormRun twin = run_twin(c, x, g, pw, pb);
      for (Isa isa : isas()) {
        const LayerNormRun fast = run_fast(c, x, g, pw, pb, isa);
        const std::string what = name_of(c, "layer_norm") + (affine ? " affine " : " plain ") + isa_label(isa);
        // y is O(1): a few float roundings of the normalised value, plus the mean's when the
        // rows sit far from zero relative to their spread (1000 +- 1: 1000 * 2^-24 / 1).
        const double y_atol = c.center == 0.0 ? 2e-6 : 3e-4;
        expect_close(what + ": y", fast.y, twin.y, y_atol, 1e-5);
        expect_close(what + ": mean", fast.mean, twin.mean, 1e-6 * c.scale, 1e-6);
        expect_close(what + ": rstd", fast.rstd, twin.rstd, 0, c.center == 0.0 ? 2e-6 : 3e-4);
        // dx = rstd * (g w - two row means): scale of |g w| * rstd.
        const double rs = 1.0 / c.scale;
        expect_close(what + ": dx", fast.dx, twin.dx, (c.center == 0.0 ? 2e-6 : 3e-4) * rs * std::sqrt(c.C), 1e-5);
        // dw, db: sums over R rows of O(1) terms.
        const double sum_atol = (c.center == 0.0 ? 2e-6 : 3e-4) * std::sqrt(static_cast<double>(c.R));
        expect_close(what + ": dweight", fast.dw, twin.dw, sum_atol, 1e-5);
        expect_close(what + ": dbias", fast.db, twin.db, 1e-6 * std::sqrt(static_cast<double>(c.R)), 1e-6);
      }
    }
  }
}

TEST(RowKernels, LayerNormBackwardComputesOnlyWhatIsAsked) {
  const Case c{33, 17, 0.0, 1.0};
  const std::vector<float> x = draws(c.R * c.C, 5, 0.0, 1.0), g = draws(c.R * c.C, 6, 0.0, 1.0);
  const std::vector<float> w = draws(c.C, 7, 1.0, 0.5);
  const LayerNormRun all = run_fast(c, x, g, w.data(), nullptr, row_kernels::best_isa());
  std::vector<float> dx(x.size(), -7.0f), dw(c.C, -7.0f), db(c.C, -7.0f);
  K::layer_norm_backward(nullptr, dw.data(), nullptr, g.data(), x.data(), w.data(), all.mean.data(), all.rstd.data(),
                         c.R, c.C);
  EXPECT_TRUE(same_bits(dw, all.dw));
  K::layer_norm_backward(dx.data(), nullptr, db.data(), g.data(), x.data(), w.data(), all.mean.data(), all.rstd.data(),
                         c.R, c.C);
  EXPECT_TRUE(same_bits(dx, all.dx));
  EXPECT_TRUE(same_bits(db, all.db));
}

TEST(RowKernels, ColumnSumsMatchSumOverDimZero) {
  for (const Case& c : cases()) {
    const std::vector<float> x = draws(c.R * c.C, 8, c.center, c.scale);
    const Tensor twin = sum(from_vector(std::vector<double>(x.begin(), x.end()), {c.R, c.C}), 0);
    for (Isa isa : isas()) {
      std::vector<float> fast(static_cast<size_t>(c.C));
      K::column_sums(fast.data(), x.data(), c.R, c.C, isa);
      // both sum in double and round once; only the order of the additions differs
      expect_close(name_of(c, "column sums ") + isa_label(isa), fast, twin.tolist<float>(), 0, 1e-6);
    }
  }
}

TEST(RowKernels, SumToALeadingDimsShapeTakesColumnSumsAndStillRecordsWhenAsked) {
  const std::vector<float> values = draws(3 * 70 * 9, 13, 0.0, 1.0);
  const Tensor x = from_vector(std::vector<double>(values.begin(), values.end()), {3, 70, 9});
  // column sums over 210 rows against one dim at a time (each in double, rounded twice)
  const Tensor twin = sum(sum(x, 0), 0);
  EXPECT_TRUE(test::all_close(sum_to(x, {9}), twin, 1e-6, 1e-6));
  EXPECT_TRUE(test::all_close(sum_to(x, {70, 9}), sum(x, 0), 0, 0));
  // a tensor that needs its gradient, with grad mode on, goes the recorded way
  const Tensor xr = x.detach().requires_grad_();
  const Tensor s = sum_to(xr, {9});
  ASSERT_TRUE(s.requires_grad());
  s.sum().backward();
  EXPECT_TRUE(test::all_close(xr.grad(), ones({3, 70, 9}), 0, 0));
}

// Everything one rms_norm case reads and writes: the fast rows, or the double twin.
struct RmsNormRun {
  std::vector<float> y, rstd, dx, dw;
};

RmsNormRun run_rms(const Case& c, const std::vector<float>& x, const std::vector<float>& g, const float* w, bool fast,
                   Isa isa = row_kernels::best_isa()) {
  RmsNormRun r{std::vector<float>(x.size()), std::vector<float>(c.R), std::vector<float>(x.size()),
               std::vector<float>(c.C)};
  if (fast) {
    K::rms_norm_forward(r.y.data(), r.rstd.data(), x.data(), w, c.R, c.C, 1e-6, isa);
    K::rms_norm_backward(r.dx.data(), r.dw.data(), g.data(), x.data(), w, r.rstd.data(), c.R, c.C, isa);
  } else {
    nn_loops::rms_norm_forward_reference<float>(r.y.data(), r.rstd.data(), x.data(), w, c.R, c.C, 1e-6);
    nn_loops::rms_norm_backward_reference<float>(r.dx.data(), r.dw.data(), g.data(), x.data(), w, r.rstd.data(), c.R,
                                                 c.C);
  }
  return r;
}

TEST(RowKernels, RmsNormMatchesDoubleTwinOnManyShapesAndScales) {
  for (const Case& c : cases()) {
    const int64_t n = c.R * c.C;
    const std::vector<float> x = draws(n, 1, c.center, c.scale), g = draws(n, 2, 0.0, 1.0);
    const std::vector<float> w = draws(c.C, 3, 1.0, 0.5);
    for (bool affine : {true, false}) {
      const float* pw = affine ? w.data() : nullptr;
      const RmsNormRun twin = run_rms(c, x, g, pw, false);
      for (Isa isa : isas()) {
        const RmsNormRun fast = run_rms(c, x, g, pw, true, isa);
        const std::string what = name_of(c, "rms_norm") + (affine ? " weight " : " plain ") + isa_label(isa);
        // x * rstd is O(1), |w| about 1: a few float roundings of the mean square and of y (no
        // mean to subtract, so a row far from zero loses nothing)
        expect_close(what + ": y", fast.y, twin.y, 2e-6, 1e-5);
        expect_close(what + ": rstd", fast.rstd, twin.rstd, 0, 2e-6);
        // dx = rstd * (g w - norm * a row mean): scale of |g w| times the largest rstd (a row of one
        // small x has a large one, and dx is then the difference of two nearly equal terms)
        const double rs = *std::max_element(twin.rstd.begin(), twin.rstd.end());
        expect_close(what + ": dx", fast.dx, twin.dx, 2e-6 * rs * std::sqrt(c.C), 1e-5);
        expect_close(what + ": dweight", fast.dw, twin.dw, 2e-6 * std::sqrt(static_cast<double>(c.R)), 1e-5);
      }
    }
  }
}

TEST(RowKernels, RmsNormOpRunsTheRowsWithTheFastKernelsAndItsTwinWithout) {
  auto float32 = [](const std::vector<float>& v, const Shape& shape) {
    return from_vector(std::vector<double>(v.begin(), v.end()), shape, kFloat32);
  };
  const Tensor x = float32(draws(6 * 40, 14, 0.5, 2.0), {2, 3, 40}).requires_grad_();
  const Tensor w = float32(draws(40, 15, 1.0, 0.5), {40}).requires_grad_();
  const Tensor g = float32(draws(6 * 40, 16, 0.0, 1.0), {2, 3, 40});
  auto run = [&] {
    x.zero_grad();
    w.zero_grad();
    const Tensor y = rms_norm(x, {40}, w, 1e-6);
    (y * g).sum().backward();
    return std::vector<Tensor>{y.detach(), x.grad(), w.grad()};
  };
  std::vector<Tensor> fast;
  {
    const FastKernelsGuard on(true);  // whatever TG_FAST_KERNELS says (the reference-mode run sets it off)
    fast = run();
  }
  std::vector<Tensor> plain;
  {
    const FastKernelsGuard off(false);
    plain = run();
  }
  const Case c{6, 40, 0.5, 2.0};
  const std::vector<float> xs = x.detach().tolist<float>(), gs = g.tolist<float>(), ws = w.detach().tolist<float>();
  const RmsNormRun rows = run_rms(c, xs, gs, ws.data(), true), twin = run_rms(c, xs, gs, ws.data(), false);
  EXPECT_TRUE(same_bits(fast[0].tolist<float>(), rows.y) && same_bits(fast[1].tolist<float>(), rows.dx) &&
              same_bits(fast[2].tolist<float>(), rows.dw));
  EXPECT_TRUE(same_bits(plain[0].tolist<float>(), twin.y) && same_bits(plain[1].tolist<float>(), twin.dx) &&
              same_bits(plain[2].tolist<float>(), twin.dw));
}

// RoPE's rows read x through its strides (a head's transposed view of the projection's output,
// and any layout with a contiguous last dim): the forward and x's gradient have the bits of the
// reference loops on a contiguous copy, on every ISA and thread count; 5-d x takes the reference.
TEST(RowKernels, RopeReadsStridedHeadsWithTheReferencesBits) {
  const int saved_threads = get_num_threads();
  struct Layout {
    Shape stored;   // x as the projection writes it
    bool transpose;  // then viewed as (B, H, T, hs)
  };
  for (const Layout& l : std::vector<Layout>{{{2, 7, 3, 16}, true}, {{3, 5, 8}, false}, {{5, 4}, false},
                                             {{2, 2, 3, 4, 6}, false}, {{1, 9, 2, 32}, true}}) {
    Tensor stored = test::normal_tensor(l.stored, 21, kFloat32);
    const Tensor x = l.transpose ? stored.transpose(1, 2) : stored;
    const int64_t T = x.size(-2), hs = x.size(-1);
    const Tensor cos = test::normal_tensor({T, hs}, 22, kFloat32), sin = test::normal_tensor({T, hs}, 23, kFloat32);
    const Tensor g = test::normal_tensor(x.sizes(), 24, kFloat32);
    auto run = [&](bool fast_kernels_on, int threads) {
      const FastKernelsGuard guard(fast_kernels_on);
      set_num_threads(threads);
      const Tensor leaf = fast_kernels_on ? x.detach().requires_grad_(true) : x.contiguous().detach().requires_grad_(true);
      const Tensor y = apply_rotary_pos_emb(leaf, cos, sin);
      (y * g).sum().backward();
      return std::pair{y.detach(), leaf.grad()};
    };
    const auto [want_y, want_dx] = run(false, 1);
    for (const int threads : {1, 2, 7}) {
      const auto [y, dx] = run(true, threads);
      EXPECT_TRUE(test::same_bytes(y, want_y)) << shape_str(l.stored) << ", " << threads << " threads";
      EXPECT_TRUE(test::same_bytes(dx.contiguous(), want_dx)) << shape_str(l.stored) << ", " << threads << " threads";
    }
    if (x.dim() != 4) continue;
    for (const Isa isa : {Isa::kPortable, Isa::kAvx2}) {  // the kernel's copies, straight
      if (!kernels::isa_available(isa)) continue;
      Tensor y = empty(x.sizes());
      const K::RopeShape shape{x.size(0), x.size(1), T, hs, x.stride(0), x.stride(1), x.stride(2)};
      K::rope_forward(y.data_ptr<float>(), x.data_ptr<float>(), cos.data_ptr<float>(), sin.data_ptr<float>(), shape, isa);
      EXPECT_TRUE(test::same_bytes(y, want_y)) << kernels::isa_name(isa);
    }
  }
  set_num_threads(saved_threads);
}

TEST(RowKernels, PortableAndAvx2AndThreadCountsGiveTheSameBits) {
  const int threads_before = get_num_threads();
  for (const Case& c : {Case{2048 + 37, 128, 0.0, 1.0}, Case{300, 1000, 3.0, 2.0}, Case{129, 9, 0.0, 1.0}}) {
    const std::vector<float> x = draws(c.R * c.C, 9, c.center, c.scale), g = draws(c.R * c.C, 10, 0.0, 1.0);
    const std::vector<float> w = draws(c.C, 11, 1.0, 0.5), b = draws(c.C, 12, 0.0, 0.5);
    set_num_threads(1);
    const LayerNormRun ref = run_fast(c, x, g, w.data(), b.data(), Isa::kPortable);
    std::vector<float> ref_sums(static_cast<size_t>(c.C));
    K::column_sums(ref_sums.data(), x.data(), c.R, c.C, Isa::kPortable);
    const RmsNormRun ref_rms = run_rms(c, x, g, w.data(), true, Isa::kPortable);
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      for (Isa isa : isas()) {
        const std::string what = name_of(c, isa_label(isa)) + " threads " + std::to_string(threads);
        const LayerNormRun r = run_fast(c, x, g, w.data(), b.data(), isa);
        EXPECT_TRUE(same_bits(r.y, ref.y)) << what << ": y";
        EXPECT_TRUE(same_bits(r.mean, ref.mean) && same_bits(r.rstd, ref.rstd)) << what << ": mean, rstd";
        EXPECT_TRUE(same_bits(r.dx, ref.dx)) << what << ": dx";
        EXPECT_TRUE(same_bits(r.dw, ref.dw) && same_bits(r.db, ref.db)) << what << ": dweight, dbias";
        std::vector<float> sums(static_cast<size_t>(c.C));
        K::column_sums(sums.data(), x.data(), c.R, c.C, isa);
        EXPECT_TRUE(same_bits(sums, ref_sums)) << what << ": column sums";
        const RmsNormRun rms = run_rms(c, x, g, w.data(), true, isa);
        EXPECT_TRUE(same_bits(rms.y, ref_rms.y) && same_bits(rms.rstd, ref_rms.rstd)) << what << ": rms_norm y, rstd";
        EXPECT_TRUE(same_bits(rms.dx, ref_rms.dx) && same_bits(rms.dw, ref_rms.dw)) << what << ": rms_norm dx, dweight";
      }
    }
  }
  set_num_threads(threads_before);
}

}  // namespace
}  // namespace tg
