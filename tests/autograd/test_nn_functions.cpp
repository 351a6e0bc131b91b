// tests/autograd/test_nn_functions.cpp — softmax, log_softmax, cross_entropy, embedding,
// layer_norm and dropout (autograd/ops/{softmax,loss,embedding,layer_norm,dropout}.cpp).
//
// For each function:
//   * the op (fused kernels) against the naive twin kernels kept beside them, on random shapes,
//     float32 and float64, contiguous and strided inputs: |got - ref| <= atol + rtol * |ref|;
//   * float64 gradients against central finite differences (eps 1e-6) of sum(w * f(x)) for a
//     random w: one backward gives the analytical gradient of every input;
//   * the special cases (-inf rows, repeated indices, no weight/bias, no draws at p = 0);
//   * every error message, by its text.
// Dropout is also compared bit for bit with PyTorch (tests/reference/dropout_torch.json, made
// by make_dropout_reference.py).
// Each comparison prints its worst error on a "[ worst    ]" line.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/gradcheck.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/random/random_kernels.h"
#include "autograd/tape.h"
#include "autograd/loops.h"
#include "autograd/ops/nn_loops.h"
#include "naive_kernels.h"
#include "test_util.h"

#ifndef TG_REFERENCE_DIR
#define TG_REFERENCE_DIR "tests/reference"
#endif

namespace tg {
namespace {

using tg::test::error_of;
using tg::test::has_part;

constexpr double kInf = std::numeric_limits<double>::infinity();

// --- helpers -------------------------------------------------------------------------------------

void report_worst(const std::string& what, double value) {
  std::cout << "[ worst    ] " << what << ": " << value << "\n";
}

// Random values in [lo, hi) of the given shape and dtype.
Tensor random_tensor(const Shape& shape, ScalarType dtype, std::mt19937& rng, double lo = -3.0, double hi = 3.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = u(rng);
  return from_vector(v, shape, dtype);
}

// The same values as t, as a strided view (every other element of the last dim, offset 1) of
// a bigger buffer: not contiguous when the last dim has more than one element.
Tensor strided_copy(const Tensor& t) {
  Shape big = t.sizes();
  if (big.empty()) return t.clone();
  big.back() = big.back() * 2 + 1;
  Tensor buffer = full(big, 1234.5, t.dtype());
  Tensor view = buffer.slice(-1, 1, std::nullopt, 2);
  view.copy_(t);
  return view;
}

// Checks |got - ref| <= atol + rtol * |ref| everywhere (NaN matches NaN, inf matches the same
// inf) and returns the largest |got - ref| over the finite pairs. Names the first failures.
double expect_close(const std::vector<double>& got, const std::vector<double>& ref, double atol, double rtol,
                    const std::string& what) {
  EXPECT_EQ(got.size(), ref.size()) << what;
  double worst = 0.0;
  int failures = 0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    const double a = got[i], b = ref[i];
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      const bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!same && failures++ < 5) ADD_FAILURE() << what << ": element " << i << ": got " << a << ", expected " << b;
      continue;
    }
    const double err = std::abs(a - b);
    worst = std::max(worst, err);
    if (err > atol + rtol * std::abs(b) && failures++ < 5) {
      ADD_FAILURE() << what << ": element " << i << ": got " << a << ", expected " << b << ", error " << err
                    << " > " << atol << " + " << rtol << " * |expected|";
    }
  }
  return worst;
}

template <class T> std::vector<double> to_double(const std::vector<T>& v) { return {v.begin(), v.end()}; }

// --- finite differences --------------------------------------------------------------------------

// tg::gradcheck (autograd/gradcheck.h) of f at float64 inputs: every analytical Jacobian entry
// against central differences with step 1e-6, |a - n| <= 1e-6 + 1e-5 |n| (tighter than
// PyTorch's defaults). Returns the absolute error of the worst entry.
double finite_difference_check(const GradcheckFn& f, const std::vector<Tensor>& inputs, const std::string& what) {
  GradcheckOptions options;
  options.eps = 1e-6;
  options.atol = 1e-6;
  options.rtol = 1e-5;
  const GradcheckResult r = gradcheck(f, inputs, options);
  EXPECT_TRUE(r.passed) << what << "\n" << r;
  return r.has_worst ? r.worst.abs_error : 0.0;
}

Shape random_shape(std::mt19937& rng, int min_dims, int max_dims, int64_t max_size) {
  std::uniform_int_distribution<int> nd(min_dims, max_dims);
  std::uniform_int_distribution<int64_t> sz(1, max_size);
  Shape s(static_cast<size_t>(nd(rng)));
  for (int64_t& v : s) v = sz(rng);
  return s;
}

// ================================================================================================
// softmax / log_softmax
// ================================================================================================

template <class T>
void softmax_vs_naive(ScalarType dt, double atol, double rtol, const std::string& label) {
  std::mt19937 rng(1234);
  double worst_fwd = 0.0, worst_bwd = 0.0;
  int cases = 0;
  for (int trial = 0; trial < 30; ++trial) {
    Shape shape = random_shape(rng, 1, 4, 6);
    if (trial % 5 == 0) shape.back() = 67;  // a long row now and then
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
      for (bool log_space : {false, true}) {
        for (bool strided : {false, true}) {
          Tensor x = random_tensor(shape, dt, rng, -8.0, 8.0);
          if (strided) x = strided_copy(x);
          x.requires_grad_();
          Tensor y = log_space ? log_softmax(x, dim) : softmax(x, dim);
          const DimSplit g = split_at_dim(shape, dim);
          const std::vector<T> xv = x.tolist<T>();
          std::vector<T> ref(xv.size());
          naive_kernels::softmax_forward_naive<T>(ref.data(), xv.data(), g.B, g.N, g.I, log_space);
          const std::string what = label + (log_space ? " log_softmax " : " softmax ") + shape_str(shape) +
                                   " dim " + std::to_string(dim) + (strided ? " strided" : "");
          worst_fwd = std::max(worst_fwd, expect_close(y.tolist<double>(), to_double(ref), atol, rtol, what));

          const Tensor gout = random_tensor(shape, dt, rng);
          y.backward(gout);
          const std::vector<T> gv = gout.tolist<T>(), yv = y.tolist<T>();
          std::vector<T> dref(xv.size());
          naive_kernels::softmax_backward_naive<T>(dref.data(), gv.data(), yv.data(), g.B, g.N, g.I, log_space);
          worst_bwd = std::max(worst_bwd, expect_close(x.grad().tolist<double>(), to_double(dref), atol, rtol,
                                                       what + " backward"));
          ++cases;
        }
      }
    }
  }
  report_worst(label + " softmax/log_softmax fused vs naive, forward (" + std::to_string(cases) + " cases)",
               worst_fwd);
  report_worst(label + " softmax/log_softmax fused vs naive, backward", worst_bwd);
}

TEST(Softmax, FusedMatchesNaiveF32) { softmax_vs_naive<float>(kFloat32, 1e-7, 1e-6, "f32"); }
TEST(Softmax, FusedMatchesNaiveF64) { softmax_vs_naive<double>(kFloat64, 1e-15, 1e-13, "f64"); }

TEST(Softmax, PlainLoopsMatchNaiveTwinsDirectly) {
  // The plain loops themselves (nn_loops), on the (B,N,I) buffers, both paths (I == 1 and I > 1).
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  const std::vector<std::array<int64_t, 3>> geometries = {{5, 33, 1}, {3, 7, 9}, {1, 1, 1}, {2, 1, 4}};
  for (const auto& [B, N, I] : geometries) {
    for (bool log_space : {false, true}) {
      std::vector<float> x(static_cast<size_t>(B * N * I)), y(x.size()), yr(x.size()), g(x.size()),
          dx(x.size()), dxr(x.size());
      for (float& v : x) v = u(rng);
      for (float& v : g) v = u(rng);
      nn_loops::softmax_forward_reference<float>(y.data(), x.data(), B, N, I, log_space);
      naive_kernels::softmax_forward_naive<float>(yr.data(), x.data(), B, N, I, log_space);
      expect_close(to_double(y), to_double(yr), 1e-7, 1e-6, "softmax_forward_reference");
      nn_loops::softmax_backward_reference<float>(dx.data(), g.data(), y.data(), B, N, I, log_space);
      naive_kernels::softmax_backward_naive<float>(dxr.data(), g.data(), y.data(), B, N, I, log_space);
      expect_close(to_double(dx), to_double(dxr), 1e-6, 1e-6, "softmax_backward_reference");
    }
  }
}

template <class T>
void expect_softmax_backward_bits_of_naive_twin() {
  // The backward loop, along the last dim (I == 1, contiguous rows) and in the general loop
  // (I > 1), takes the same sums and products in the same order as the naive twin: same bits.
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::mt19937 rng(17);
  std::uniform_real_distribution<T> u(-10, 10);
  const std::vector<std::array<int64_t, 3>> geometries = {{64, 128, 1}, {5, 67, 1}, {1, 1, 1}, {3, 7, 9}, {2, 33, 2}};
  for (const auto& [B, N, I] : geometries) {
    for (bool log_space : {false, true}) {
      std::vector<T> x(static_cast<size_t>(B * N * I)), y(x.size()), g(x.size()), dx(x.size()), dxr(x.size());
      for (T& v : x) v = u(rng);
      for (T& v : g) v = u(rng);
      nn_loops::softmax_forward_reference<T>(y.data(), x.data(), B, N, I, log_space);
      nn_loops::softmax_backward_reference<T>(dx.data(), g.data(), y.data(), B, N, I, log_space);
      naive_kernels::softmax_backward_naive<T>(dxr.data(), g.data(), y.data(), B, N, I, log_space);
      for (size_t k = 0; k < dx.size(); ++k) {
        ASSERT_EQ(std::bit_cast<Bits>(dx[k]), std::bit_cast<Bits>(dxr[k]))
            << (log_space ? "log_softmax" : "softmax") << " (B,N,I) = (" << B << "," << N << "," << I << ") element "
            << k << ": " << dx[k] << " vs naive " << dxr[k];
      }
    }
  }
}

TEST(Softmax, BackwardKernelHasTheBitsOfTheNaiveTwin) {
  expect_softmax_backward_bits_of_naive_twin<float>();
  expect_softmax_backward_bits_of_naive_twin<double>();
}

TEST(Softmax, KnownValues) {
  // torch.softmax(torch.tensor([1., 2., 3.]), 0) and log_softmax
  Tensor x = tensor({1.0, 2.0, 3.0});
  expect_close(softmax(x, 0).tolist<double>(), {0.09003057, 0.24472847, 0.66524096}, 1e-7, 1e-6, "softmax");
  expect_close(log_softmax(x, 0).tolist<double>(), {-2.40760596, -1.40760596, -0.40760596}, 1e-6, 1e-6,
               "log_softmax");
  // Large values do not overflow (the max is subtracted).
  Tensor big = tensor({1000.0, 1001.0}, kFloat32);
  expect_close(softmax(big, -1).tolist<double>(), {0.26894142, 0.73105858}, 1e-7, 1e-6, "softmax of large values");
  // A 0-d tensor is one row of one element.
  EXPECT_EQ(softmax(scalar_tensor(3.0), 0).item(), 1.0);
}

TEST(Softmax, BackwardMatchesFiniteDifferencesF64) {
  std::mt19937 rng(5);
  double worst = 0.0;
  for (bool log_space : {false, true}) {
    for (int64_t dim : {0, 1, 2, -1}) {
      for (bool strided : {false, true}) {
        Tensor x = random_tensor({3, 4, 5}, kFloat64, rng);
        if (strided) x = strided_copy(x);
        x.requires_grad_();
        worst = std::max(worst, finite_difference_check(
                                    [&](const std::vector<Tensor>& in) {
                                      return log_space ? log_softmax(in[0], dim) : softmax(in[0], dim);
                                    },
                                    {x}, std::string(log_space ? "log_softmax" : "softmax") + " dim " +
                                             std::to_string(dim)));
      }
    }
  }
  report_worst("softmax/log_softmax gradient vs finite differences (f64)", worst);
}

TEST(Softmax, NegInfEntriesGetZeroProbabilityAndZeroGradient) {
  // A causal-attention style mask: row r may see columns 0..r.
  const double ninf = -kInf;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = from_vector(std::vector<double>{0.5, ninf, ninf, 1.0, 2.0, ninf, -1.0, 0.0, 1.0}, {3, 3}, dt);
    x.requires_grad_();
    Tensor y = softmax(x, -1);
    const std::vector<double> v = y.tolist<double>();
    EXPECT_EQ(v[0], 1.0);
    EXPECT_EQ(v[1], 0.0);
    EXPECT_EQ(v[2], 0.0);
    EXPECT_NEAR(v[3], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
    EXPECT_EQ(v[5], 0.0);
    y.backward(from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}, dt));
    const std::vector<double> dx = x.grad().tolist<double>();
    for (double d : dx) EXPECT_TRUE(std::isfinite(d));
    EXPECT_EQ(dx[1], 0.0);
    EXPECT_EQ(dx[2], 0.0);
    EXPECT_EQ(dx[5], 0.0);

    Tensor xl = x.detach().clone().requires_grad_();
    Tensor ly = log_softmax(xl, 1);
    const std::vector<double> lv = ly.tolist<double>();
    EXPECT_EQ(lv[0], 0.0);
    EXPECT_EQ(lv[1], ninf);
    EXPECT_NEAR(lv[4], -std::log1p(std::exp(-1.0)), 1e-6);
    ly.backward(ones({3, 3}, dt));
    for (double d : xl.grad().tolist<double>()) EXPECT_TRUE(std::isfinite(d));
  }
}

TEST(Softmax, RowOfAllNegInfIsNaNLikePyTorch) {
  const double ninf = -kInf;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = from_vector(std::vector<double>{ninf, ninf, ninf, 0.0, 0.0, 0.0}, {2, 3}, dt);
    for (bool log_space : {false, true}) {
      const std::vector<double> y = (log_space ? log_softmax(x, 1) : softmax(x, 1)).tolist<double>();
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(y[i])) << "element " << i;
      for (int i = 3; i < 6; ++i) EXPECT_NEAR(y[i], log_space ? -std::log(3.0) : 1.0 / 3.0, 1e-7);
    }
    // Along dim 0 (the general path) the first column is all -inf too.
    Tensor xt = from_vector(std::vector<double>{ninf, 0.0, ninf, 1.0}, {2, 2}, dt);
    const std::vector<double> y0 = softmax(xt, 0).tolist<double>();
    EXPECT_TRUE(std::isnan(y0[0]) && std::isnan(y0[2]));
    EXPECT_NEAR(y0[1], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
  }
}

TEST(Softmax, NodeNamesAndSavedOutput) {
  Tensor x = tensor({{1.0, 2.0}, {3.0, 5.0}}).requires_grad_();
  Tensor y = softmax(x, 1);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name, "SoftmaxBackward0");
  ASSERT_EQ(y.grad_fn()->saved.size(), 1u);  // only the output
  EXPECT_TRUE(y.grad_fn()->saved[0].data.is_alias_of(y));
  EXPECT_EQ(log_softmax(x, 0).grad_fn()->name, "LogSoftmaxBackward0");
  // Nothing is recorded without an input that requires grad.
  EXPECT_FALSE(softmax(x.detach(), 1).grad_fn());
}

TEST(Softmax, ErrorMessages) {
  EXPECT_TRUE(has_part(error_of([] { softmax(tensor({1, 2, 3}), 0); }),
             "softmax: expected a floating point tensor (float32 or float64), got int64"));
  EXPECT_TRUE(has_part(error_of([] { softmax(zeros({2, 3}), 2); }), "softmax: dim 2 out of range [-2, 1]"));
  EXPECT_TRUE(has_part(error_of([] { log_softmax(zeros({2, 3}), -3); }), "log_softmax: dim -3 out of range [-2, 1]"));
}

// ================================================================================================
// cross_entropy
// ================================================================================================

template <class T>
void cross_entropy_vs_naive(ScalarType dt, double atol, double rtol, const std::string& label) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int64_t> size(1, 12);
  double worst_fwd = 0.0, worst_bwd = 0.0;
  int cases = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t N = size(rng), C = trial % 7 == 0 ? 300 : size(rng);
    std::vector<int64_t> t(static_cast<size_t>(N));
    for (int64_t& v : t) v = std::uniform_int_distribution<int64_t>(0, C - 1)(rng);
    if (N > 1 && trial % 3 == 0) t[0] = -100;  // an ignored row
    for (bool strided : {false, true}) {
      Tensor logits = random_tensor({N, C}, dt, rng, -6.0, 6.0);
      if (strided) logits = strided_copy(logits);
      logits.requires_grad_();
      const Tensor targets = from_vector(t, {N});
      Tensor loss = cross_entropy(logits, targets);
      const std::vector<T> xv = logits.tolist<T>();
      T ref = 0;
      naive_kernels::cross_entropy_forward_naive<T>(&ref, xv.data(), t.data(), N, C);
      const std::string what = label + " cross_entropy (" + std::to_string(N) + "," + std::to_string(C) + ")" +
                               (strided ? " strided" : "");
      worst_fwd = std::max(worst_fwd, expect_close({loss.item()}, {static_cast<double>(ref)}, atol, rtol, what));

      const T g = static_cast<T>(0.5 + trial * 0.1);
      loss.backward(full({}, static_cast<double>(g), dt));
      std::vector<T> dref(xv.size());
      naive_kernels::cross_entropy_backward_naive<T>(dref.data(), &g, xv.data(), t.data(), N, C);
      worst_bwd = std::max(worst_bwd, expect_close(logits.grad().tolist<double>(), to_double(dref), atol, rtol,
                                                   what + " backward"));
      ++cases;
    }
  }
  report_worst(label + " cross_entropy fused vs naive, forward (" + std::to_string(cases) + " cases)", worst_fwd);
  report_worst(label + " cross_entropy fused vs naive, backward", worst_bwd);
}

TEST(CrossEntropy, FusedMatchesNaiveF32) { cross_entropy_vs_naive<float>(kFloat32, 1e-6, 1e-6, "f32"); }
TEST(CrossEntropy, FusedMatchesNaiveF64) { cross_entropy_vs_naive<double>(kFloat64, 1e-14, 1e-12, "f64"); }

TEST(CrossEntropy, KnownValues) {
  // Equal logits: the loss is log(C) whatever the targets.
  Tensor l = cross_entropy(zeros({4, 10}), tensor({0, 3, 9, 1}));
  EXPECT_NEAR(l.item(), std::log(10.0), 1e-6);
  EXPECT_EQ(l.dim(), 0);
  // F.cross_entropy(torch.tensor([[1., 2., 3.], [1., -1., 0.]]), torch.tensor([2, 0])) = 0.3802...
  Tensor logits = tensor({{1.0, 2.0, 3.0}, {1.0, -1.0, 0.0}});
  const double want = 0.5 * ((std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0) +
                             (std::log(std::exp(1.0) + std::exp(-1.0) + 1.0) - 1.0));
  EXPECT_NEAR(cross_entropy(logits, tensor({2, 0})).item(), want, 1e-6);
  // One row (C) with a 0-d target is the same as (1, C) with (1).
  Tensor row = tensor({0.3, -1.2, 2.0, 0.1});
  EXPECT_EQ(cross_entropy(row, scalar_tensor(2, kInt64)).item(), cross_entropy(row.view({1, 4}), tensor({2})).item());
  // -100 rows are skipped, and the mean is over the rest.
  EXPECT_NEAR(cross_entropy(logits, tensor({2, -100})).item(),
              std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0, 1e-6);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferencesF64) {
  std::mt19937 rng(11);
  double worst = 0.0;
  for (bool strided : {false, true}) {
    Tensor x = random_tensor({5, 7}, kFloat64, rng);
    if (strided) x = strided_copy(x);
    x.requires_grad_();
    const Tensor t = tensor({3, 0, -100, 6, 3});
    worst = std::max(worst, finite_difference_check(
                                [&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t); }, {x},
                                "cross_entropy (5,7)"));
  }
  Tensor row = random_tensor({6}, kFloat64, rng).requires_grad_();
  worst =
      std::max(worst, finite_difference_check(
                          [](const std::vector<Tensor>& in) { return cross_entropy(in[0], scalar_tensor(4, kInt64)); },
                          {row}, "cross_entropy (6) with a 0-d target"));
  report_worst("cross_entropy gradient vs finite differences (f64)", worst);
}

TEST(CrossEntropy, NodeNameAndGradientFormula) {
  Tensor logits = tensor({{1.0, 2.0, 3.0}, {0.0, 0.0, 0.0}}).requires_grad_();
  Tensor loss = cross_entropy(logits, tensor({1, 2}));
  ASSERT_TRUE(loss.grad_fn());
  EXPECT_EQ(loss.grad_fn()->name, "NllLossBackward0");
  loss.backward();
  // (softmax - onehot) / N
  const std::vector<double> p = softmax(logits.detach(), 1).tolist<double>();
  std::vector<double> want = p;
  want[1] -= 1.0;
  want[5] -= 1.0;
  for (double& v : want) v /= 2.0;
  expect_close(logits.grad().tolist<double>(), want, 1e-7, 1e-6, "dlogits");
}

TEST(CrossEntropy, ErrorMessages) {
  const std::string dtype = error_of([] { cross_entropy(zeros({2, 3}), tensor({1.0f, 2.0f})); });
  EXPECT_TRUE(has_part(dtype, "cross_entropy: expected scalar type Long but found Float"));
  const std::string range = error_of([] { cross_entropy(zeros({3, 5}), tensor({0, 7, 1})); });
  EXPECT_TRUE(has_part(range, "cross_entropy: Target 7 is out of bounds."));
  EXPECT_TRUE(has_part(range, "element 1 of the flattened targets is 7"));
  EXPECT_TRUE(has_part(range, "5 classes"));
  EXPECT_TRUE(has_part(error_of([] {
                         cross_entropy(zeros({3, 5}), tensor({0, -1, 1}));
                       }),
                       "Target -1 is out of bounds."));
  const std::string batch = error_of([] { cross_entropy(zeros({3, 5}), tensor({0, 1, 2, 3})); });
  EXPECT_TRUE(has_part(batch, "cross_entropy: Expected input batch_size (3) to match target batch_size (4)."));
  EXPECT_TRUE(has_part(error_of([] { cross_entropy(zeros({2, 3, 4}), tensor({0, 1})); }),
             "cross_entropy: logits of shape (2,3,4) (class dim 1) need targets of shape (2,4), got (2)"));
  EXPECT_TRUE(has_part(error_of([] { cross_entropy(zeros({2, 3}), zeros({2, 1}, kInt64)); }),
             "cross_entropy: logits of shape (2,3) (class dim 1) need targets of shape (2), got (2,1)"));
  EXPECT_TRUE(has_part(error_of([] { cross_entropy(zeros({5}), tensor({1, 2})); }),
             "cross_entropy: logits of shape (5) (one row) need a 0-d target, got targets of shape (2)"));
  EXPECT_TRUE(has_part(error_of([] { cross_entropy(tensor({{1, 2}}), tensor({0})); }),
             "cross_entropy: expected a floating point tensor (float32 or float64), got int64"));
}

// ================================================================================================
// embedding
// ================================================================================================

template <class T>
void embedding_vs_naive(ScalarType dt, const std::string& label) {
  std::mt19937 rng(3);
  int cases = 0;
  double worst_fwd = 0.0, worst_bwd = 0.0;
  for (int trial = 0; trial < 25; ++trial) {
    const int64_t V = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    const int64_t C = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    const Shape ishape = random_shape(rng, 0, 3, 5);
    std::vector<int64_t> idx(static_cast<size_t>(shape_numel(ishape)));
    for (int64_t& v : idx) v = std::uniform_int_distribution<int64_t>(0, V - 1)(rng);  // repeats are likely
    for (bool strided : {false, true}) {
      Tensor weight = random_tensor({V, C}, dt, rng);
      if (strided) weight = strided_copy(weight);
      weight.requires_grad_();
      const Tensor indices = from_vector(idx, ishape);
      Tensor out = embedding(weight, indices);
      Shape want_shape = ishape;
      want_shape.push_back(C);
      EXPECT_EQ(out.sizes(), want_shape);
      const int64_t N = static_cast<int64_t>(idx.size());
      const std::vector<T> wv = weight.tolist<T>();
      std::vector<T> ref(static_cast<size_t>(N * C));
      naive_kernels::embedding_forward_naive<T>(ref.data(), wv.data(), idx.data(), N, C);
      const std::string what = label + " embedding V=" + std::to_string(V) + " C=" + std::to_string(C) +
                               " indices " + shape_str(ishape) + (strided ? " strided weight" : "");
      worst_fwd = std::max(worst_fwd, expect_close(out.tolist<double>(), to_double(ref), 0.0, 0.0, what));

      const Tensor g = random_tensor(out.sizes(), dt, rng);
      out.backward(g);
      const std::vector<T> gv = g.tolist<T>();
      std::vector<T> dref(static_cast<size_t>(V * C));
      naive_kernels::embedding_backward_naive<T>(dref.data(), gv.data(), idx.data(), N, V, C);
      worst_bwd = std::max(worst_bwd, expect_close(weight.grad().tolist<double>(), to_double(dref), 0.0, 0.0,
                                                   what + " backward"));
      ++cases;
    }
  }
  report_worst(label + " embedding fused vs naive, forward (" + std::to_string(cases) + " cases)", worst_fwd);
  report_worst(label + " embedding fused vs naive, backward", worst_bwd);
}

TEST(Embedding, FusedMatchesNaiveF32) { embedding_vs_naive<float>(kFloat32, "f32"); }
TEST(Embedding, FusedMatchesNaiveF64) { embedding_vs_naive<double>(kFloat64, "f64"); }

TEST(Embedding, RepeatedIndicesAccumulateInBackward) {
  Tensor weight = zeros({4, 2}).requires_grad_();
  Tensor out = embedding(weight, tensor({{1, 1}, {3, 1}}));
  EXPECT_EQ(out.sizes(), (Shape{2, 2, 2}));
  ASSERT_TRUE(out.grad_fn());
  EXPECT_EQ(out.grad_fn()->name, "EmbeddingBackward0");
  out.backward(from_vector(std::vector<double>{1, 10, 2, 20, 3, 30, 4, 40}, {2, 2, 2}));
  // row 1 gets positions (0,0), (0,1), (1,1); row 3 gets (1,0); rows 0 and 2 nothing
  EXPECT_EQ(weight.grad().tolist<double>(), (std::vector<double>{0, 0, 1 + 2 + 4, 10 + 20 + 40, 0, 0, 3, 30}));
}

TEST(Embedding, GathersRows) {
  Tensor weight = tensor({{0.0, 0.5}, {1.0, 1.5}, {2.0, 2.5}});
  Tensor out = embedding(weight, scalar_tensor(2, kInt64));
  EXPECT_EQ(out.sizes(), (Shape{2}));
  EXPECT_EQ(out.tolist<double>(), (std::vector<double>{2.0, 2.5}));
  EXPECT_EQ(embedding(weight, tensor({2, 0, 2})).tolist<double>(), (std::vector<double>{2, 2.5, 0, 0.5, 2, 2.5}));
}

TEST(Embedding, BackwardMatchesFiniteDifferencesF64) {
  std::mt19937 rng(21);
  Tensor weight = random_tensor({5, 3}, kFloat64, rng).requires_grad_();
  const Tensor idx = tensor({{4, 0, 4}, {2, 2, 2}});
  const double worst = finite_difference_check(
      [&](const std::vector<Tensor>& in) { return embedding(in[0], idx); }, {weight}, "embedding");
  report_worst("embedding gradient vs finite differences (f64)", worst);
}

TEST(Embedding, ErrorMessages) {
  const std::string range = error_of([] { embedding(zeros({5, 3}), tensor({{0, 1, 2}, {3, 4, 7}})); });
  EXPECT_TRUE(has_part(range, "embedding: index out of range in self"));
  EXPECT_TRUE(has_part(range, "indices[1,2] = 7"));
  EXPECT_TRUE(has_part(range, "weight has 5 rows"));
  EXPECT_TRUE(has_part(error_of([] { embedding(zeros({5, 3}), tensor({-1})); }),
             "embedding: index out of range in self: indices[0] = -1, but weight has 5 rows (valid indices are 0..4)"));
  EXPECT_TRUE(has_part(error_of([] { embedding(zeros({5, 3}), scalar_tensor(5, kInt64)); }),
             "embedding: index out of range in self: indices = 5, but weight has 5 rows"));
  EXPECT_TRUE(has_part(error_of([] { embedding(zeros({5, 3}), tensor({1.0f})); }),
             "embedding: expected indices of dtype int64 (Long), got float32"));
  EXPECT_TRUE(has_part(error_of([] { embedding(zeros({5}), tensor({1})); }),
                       "embedding: weight must be 2-D (V,C), got shape (5)"));
}

// ================================================================================================
// layer_norm
// ================================================================================================

template <class T>
void layer_norm_vs_naive(ScalarType dt, double atol, double rtol, const std::string& label) {
  std::mt19937 rng(8);
  double worst_fwd = 0.0, worst_bwd = 0.0;
  int cases = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const Shape lead = random_shape(rng, 0, 2, 5);
    const Shape ns = random_shape(rng, 1, 2, trial % 4 == 0 ? 70 : 9);
    Shape shape = lead;
    shape.insert(shape.end(), ns.begin(), ns.end());
    const bool has_weight = trial % 3 != 1, has_bias = trial % 3 != 2;
    const bool strided = trial % 2 == 1;
    Tensor x = random_tensor(shape, dt, rng, -2.0, 4.0);
    if (strided) x = strided_copy(x);
    x.requires_grad_();
    Tensor w = has_weight ? random_tensor(ns, dt, rng).requires_grad_() : Tensor();
    Tensor b = has_bias ? random_tensor(ns, dt, rng).requires_grad_() : Tensor();
    const double eps = 1e-5;
    Tensor y = layer_norm(x, ns, w, b, eps);

    const int64_t C = shape_numel(ns), R = shape_numel(lead);
    const std::vector<T> xv = x.tolist<T>();
    const std::vector<T> wv = has_weight ? w.tolist<T>() : std::vector<T>();
    const std::vector<T> bv = has_bias ? b.tolist<T>() : std::vector<T>();
    std::vector<T> ref(xv.size()), mean(static_cast<size_t>(R)), rstd(static_cast<size_t>(R));
    naive_kernels::layer_norm_forward_naive<T>(ref.data(), mean.data(), rstd.data(), xv.data(),
                                               has_weight ? wv.data() : nullptr, has_bias ? bv.data() : nullptr, R, C,
                                               eps);
    const std::string what = label + " layer_norm " + shape_str(shape) + " over " + shape_str(ns) +
                             (has_weight ? " +w" : "") + (has_bias ? " +b" : "") + (strided ? " strided" : "");
    worst_fwd = std::max(worst_fwd, expect_close(y.tolist<double>(), to_double(ref), atol, rtol, what));

    const Tensor g = random_tensor(shape, dt, rng);
    y.backward(g);
    const std::vector<T> gv = g.tolist<T>();
    std::vector<T> dx(xv.size()), dw(static_cast<size_t>(C)), db(static_cast<size_t>(C));
    naive_kernels::layer_norm_backward_naive<T>(dx.data(), dw.data(), db.data(), gv.data(), xv.data(),
                                    has_weight ? wv.data() : nullptr, mean.data(), rstd.data(), R, C);
    // dx has a cancellation (dnorm - mean(dnorm) - ...): scale the tolerance by the row's size
    worst_bwd = std::max(worst_bwd, expect_close(x.grad().tolist<double>(), to_double(dx), atol * 10, rtol * 10,
                                                 what + " dx"));
    if (has_weight) {
      worst_bwd = std::max(worst_bwd, expect_close(w.grad().tolist<double>(), to_double(dw), atol * R, rtol,
                                                   what + " dweight"));
    }
    if (has_bias) {
      worst_bwd = std::max(worst_bwd, expect_close(b.grad().tolist<double>(), to_double(db), atol * R, rtol,
                                                   what + " dbias"));
    }
    ++cases;
  }
  report_worst(label + " layer_norm fused vs naive, forward (" + std::to_string(cases) + " cases)", worst_fwd);
  report_worst(label + " layer_norm fused vs naive, backward (dx, dweight, dbias)", worst_bwd);
}

TEST(LayerNorm, FusedMatchesNaiveF32) { layer_norm_vs_naive<float>(kFloat32, 1e-6, 1e-5, "f32"); }
TEST(LayerNorm, FusedMatchesNaiveF64) { layer_norm_vs_naive<double>(kFloat64, 1e-13, 1e-11, "f64"); }

TEST(LayerNorm, PlainLoopsMatchNaiveTwinsDirectly) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  const int64_t R = 6, C = 37;
  std::vector<double> x(R * C), w(C), b(C), g(R * C);
  for (auto* v : {&x, &w, &b, &g})
    for (double& e : *v) e = u(rng);
  std::vector<double> y(R * C), yr(R * C), m(R), mr(R), rs(R), rsr(R);
  nn_loops::layer_norm_forward_reference<double>(y.data(), m.data(), rs.data(), x.data(), w.data(), b.data(), R, C,
                                                 1e-5);
  naive_kernels::layer_norm_forward_naive<double>(yr.data(), mr.data(), rsr.data(), x.data(), w.data(), b.data(), R, C,
                                                  1e-5);
  expect_close(y, yr, 1e-13, 1e-12, "layer_norm_forward out");
  expect_close(m, mr, 1e-14, 1e-13, "layer_norm_forward mean");
  expect_close(rs, rsr, 1e-14, 1e-13, "layer_norm_forward rstd");
  std::vector<double> dx(R * C), dxr(R * C), dw(C), dwr(C), db(C), dbr(C);
  nn_loops::layer_norm_backward_reference<double>(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(),
                                                  m.data(), rs.data(), R, C);
  naive_kernels::layer_norm_backward_naive<double>(dxr.data(), dwr.data(), dbr.data(), g.data(), x.data(), w.data(),
                                                   m.data(), rs.data(), R, C);
  expect_close(dx, dxr, 1e-12, 1e-11, "layer_norm_backward dx");
  expect_close(dw, dwr, 1e-12, 1e-11, "layer_norm_backward dweight");
  expect_close(db, dbr, 1e-12, 1e-11, "layer_norm_backward dbias");
  // Only dx wanted: the loop takes null for the others.
  std::vector<double> dx_only(R * C);
  nn_loops::layer_norm_backward_reference<double>(dx_only.data(), nullptr, nullptr, g.data(), x.data(), w.data(),
                                                  m.data(), rs.data(), R, C);
  EXPECT_EQ(dx_only, dx);
}

TEST(LayerNorm, BackwardMatchesFiniteDifferencesF64) {
  std::mt19937 rng(13);
  double worst = 0.0;
  for (bool strided : {false, true}) {
    Tensor x = random_tensor({2, 3, 4, 5}, kFloat64, rng);
    if (strided) x = strided_copy(x);
    x.requires_grad_();
    Tensor w = random_tensor({4, 5}, kFloat64, rng).requires_grad_();
    Tensor b = random_tensor({4, 5}, kFloat64, rng).requires_grad_();
    worst = std::max(worst, finite_difference_check(
                                [](const std::vector<Tensor>& in) { return layer_norm(in[0], {4, 5}, in[1], in[2]); },
                                {x, w, b}, "layer_norm x, weight, bias"));
  }
  Tensor x = random_tensor({3, 6}, kFloat64, rng).requires_grad_();
  worst =
      std::max(worst, finite_difference_check(
                          [](const std::vector<Tensor>& in) { return layer_norm(in[0], {6}, Tensor(), Tensor(), 0.1); },
                          {x}, "layer_norm without weight and bias"));
  report_worst("layer_norm gradient vs finite differences (f64)", worst);
}

TEST(LayerNorm, WithoutWeightAndBiasNormalisesEachRow) {
  std::mt19937 rng(2);
  Tensor x = random_tensor({4, 16}, kFloat64, rng, 3.0, 9.0).requires_grad_();
  Tensor y = layer_norm(x, {16}, Tensor(), Tensor(), 0.0);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name, "NativeLayerNormBackward0");
  for (int64_t r = 0; r < 4; ++r) {
    const std::vector<double> row = y[r].tolist<double>();
    double m = 0, v = 0;
    for (double e : row) m += e / 16;
    for (double e : row) v += (e - m) * (e - m) / 16;
    EXPECT_NEAR(m, 0.0, 1e-12);
    EXPECT_NEAR(v, 1.0, 1e-12);
  }
  y.backward(ones({4, 16}, kFloat64));
  // sum of the outputs of a row does not depend on x: the gradient of sum(y) is 0
  for (double d : x.grad().tolist<double>()) EXPECT_NEAR(d, 0.0, 1e-12);
  // Only the bias: its gradient is the column sums of g; the weight stays undefined.
  Tensor b = zeros({16}).requires_grad_();
  Tensor xf = ones({3, 16});
  layer_norm(xf, {16}, Tensor(), b).backward(full({3, 16}, 2.0));
  EXPECT_EQ(b.grad().tolist<double>(), std::vector<double>(16, 6.0));
}

TEST(LayerNorm, ErrorMessages) {
  EXPECT_TRUE(has_part(error_of([] { layer_norm(zeros({2, 3}), {4}); }),
             "layer_norm: Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"));
  EXPECT_TRUE(has_part(error_of([] { layer_norm(zeros({3}), {2, 3}); }),
             "Given normalized_shape=[2, 3], expected input with shape [*, 2, 3], but got input of size[3]"));
  EXPECT_TRUE(has_part(error_of([] { layer_norm(zeros({2, 4}), {4}, ones({3})); }),
             "layer_norm: Expected weight to be of same shape as normalized_shape, but got weight of shape [3] and "
             "normalized_shape = [4]"));
  EXPECT_TRUE(has_part(error_of([] { layer_norm(zeros({2, 4}), {4}, ones({4}), ones({2, 2})); }),
             "layer_norm: Expected bias to be of same shape as normalized_shape, but got bias of shape [2, 2] and "
             "normalized_shape = [4]"));
  EXPECT_TRUE(has_part(error_of([] { layer_norm(zeros({2, 4}), {}); }),
             "layer_norm: Expected normalized_shape to be at least 1-dimensional"));
  EXPECT_TRUE(has_part(error_of([] { layer_norm(zeros({2, 4}), {4}, ones({4}, kFloat64)); }),
             "layer_norm: expected weight to have the input's dtype float32, got float64"));
}

// ================================================================================================
// rms_norm
// ================================================================================================

TEST(RmsNorm, PlainLoopsFollowTheFormula) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  const int64_t R = 5, C = 19;
  const double eps = 1e-3;
  std::vector<double> x(R * C), w(C), g(R * C);
  for (auto* v : {&x, &w, &g})
    for (double& e : *v) e = u(rng);
  std::vector<double> y(R * C), rstd(R), dx(R * C), dw(C);
  nn_loops::rms_norm_forward_reference<double>(y.data(), rstd.data(), x.data(), w.data(), R, C, eps);
  nn_loops::rms_norm_backward_reference<double>(dx.data(), dw.data(), g.data(), x.data(), w.data(), rstd.data(), R, C);
  // the formulas of rms_norm.cpp's header, written out again
  std::vector<double> want_dw(C, 0.0);
  for (int64_t r = 0; r < R; ++r) {
    double squares = 0.0;
    for (int64_t c = 0; c < C; ++c) squares += x[r * C + c] * x[r * C + c];
    const double rs = 1.0 / std::sqrt(squares / C + eps);
    EXPECT_NEAR(rstd[r], rs, 1e-14);
    double dnorm_norm = 0.0;
    for (int64_t c = 0; c < C; ++c) dnorm_norm += g[r * C + c] * w[c] * x[r * C + c] * rs / C;
    for (int64_t c = 0; c < C; ++c) {
      const double norm = x[r * C + c] * rs;
      EXPECT_NEAR(y[r * C + c], norm * w[c], 1e-13);
      EXPECT_NEAR(dx[r * C + c], rs * (g[r * C + c] * w[c] - norm * dnorm_norm), 1e-12);
      want_dw[c] += g[r * C + c] * norm;
    }
  }
  expect_close(dw, want_dw, 1e-12, 1e-11, "rms_norm_backward dweight");
  // only dx wanted: the loop takes null for dweight
  std::vector<double> dx_only(R * C);
  nn_loops::rms_norm_backward_reference<double>(dx_only.data(), nullptr, g.data(), x.data(), w.data(), rstd.data(), R,
                                                C);
  EXPECT_EQ(dx_only, dx);
}

TEST(RmsNorm, RowsComeOutWithARootMeanSquareOfOne) {
  std::mt19937 rng(6);
  Tensor x = random_tensor({3, 2, 8}, kFloat64, rng, -4.0, 9.0).requires_grad_();
  Tensor y = rms_norm(x, {8}, Tensor(), 0.0);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name, "RmsNormBackward0");
  const std::vector<double> v = y.tolist<double>();
  for (size_t r = 0; r < 6; ++r) {
    double squares = 0.0;
    for (size_t c = 0; c < 8; ++c) squares += v[r * 8 + c] * v[r * 8 + c];
    EXPECT_NEAR(squares / 8, 1.0, 1e-12);
  }
  // with eps 0, y does not change when x is scaled: its derivative along x itself is 0, so
  // x . d/dx sum(y * c) = 0 for any c held fixed (Euler's theorem, degree 0)
  Tensor s = sum(mul(y, x.detach()));
  s.backward();
  EXPECT_NEAR(sum(mul(x.grad(), x.detach())).item<double>(), 0.0, 1e-10);
  // float32 without eps takes float32's machine epsilon: a zero row gives zeros, not NaN
  EXPECT_EQ(rms_norm(zeros({2, 4}), {4}).tolist<float>(), std::vector<float>(8, 0.0f));
}

TEST(RmsNorm, ErrorMessages) {
  EXPECT_TRUE(has_part(error_of([] { rms_norm(zeros({2, 3}), {4}); }),
                       "rms_norm: normalized_shape (4) is not the input's trailing dims: input of shape (2,3)"));
  EXPECT_TRUE(has_part(error_of([] { rms_norm(zeros({2, 4}), {4}, ones({3})); }),
                       "rms_norm: weight of shape (3) is not normalized_shape (4)"));
  EXPECT_TRUE(has_part(error_of([] { rms_norm(zeros({2, 4}), {}); }),
                       "rms_norm: normalized_shape must have at least one dim"));
  EXPECT_TRUE(has_part(error_of([] { rms_norm(zeros({2, 4}), {4}, ones({4}, kFloat64)); }),
                       "rms_norm: expected weight to have the input's dtype float32, got float64"));
  EXPECT_TRUE(has_part(error_of([] { rms_norm(zeros({2, 4}, kInt64), {4}); }),
                       "rms_norm: expected a floating point tensor (float32 or float64), got int64"));
  EXPECT_TRUE(has_part(error_of([] { rms_norm(zeros({2, 4}), {4}, Tensor(), -1.0); }),
                       "rms_norm: eps must be at least 0, got -1"));
}

// ================================================================================================
// apply_rotary_pos_emb (RoPE)
// ================================================================================================

TEST(Rope, PlainLoopsTurnEachPairOfHalvesByItsAngle) {
  // with Hugging Face's tables (the same angle in both halves) each pair (x_i, x_{i+hs/2}) is
  // turned by its angle, and the backward turns the gradient back: dx = R(-angle) g
  const int64_t R = 3, T = 4, hs = 6, half = 3;
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<double> x(R * T * hs), g(R * T * hs), angle(T * half), cos(T * hs), sin(T * hs);
  for (auto* v : {&x, &g, &angle})
    for (double& e : *v) e = u(rng);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < hs; ++i) {
      cos[t * hs + i] = std::cos(angle[t * half + i % half]);
      sin[t * hs + i] = std::sin(angle[t * half + i % half]);
    }
  std::vector<double> y(R * T * hs), dx(R * T * hs);
  nn_loops::rope_forward_reference<double>(y.data(), x.data(), cos.data(), sin.data(), R, T, hs);
  nn_loops::rope_backward_reference<double>(dx.data(), g.data(), cos.data(), sin.data(), R, T, hs);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = (r * T + t) * hs + i, b = a + half;
        const double c = std::cos(angle[t * half + i]), s = std::sin(angle[t * half + i]);
        EXPECT_NEAR(y[a], c * x[a] - s * x[b], 1e-14);
        EXPECT_NEAR(y[b], s * x[a] + c * x[b], 1e-14);
        EXPECT_NEAR(dx[a], c * g[a] + s * g[b], 1e-14);
        EXPECT_NEAR(dx[b], -s * g[a] + c * g[b], 1e-14);
        EXPECT_NEAR(y[a] * y[a] + y[b] * y[b], x[a] * x[a] + x[b] * x[b], 1e-12);  // a rotation keeps lengths
      }
}

TEST(Rope, ErrorMessages) {
  const Tensor t = ones({4, 6});
  EXPECT_TRUE(has_part(error_of([&] { apply_rotary_pos_emb(zeros({2, 4, 5}), ones({4, 5}), ones({4, 5})); }),
                       "apply_rotary_pos_emb: head_dim must be even"));
  EXPECT_TRUE(has_part(error_of([&] { apply_rotary_pos_emb(zeros({2, 4, 6}), ones({3, 6}), t); }),
                       "apply_rotary_pos_emb: cos must be (T, head_dim) = (4,6) for input of shape (2,4,6), got (3,6)"));
  EXPECT_TRUE(has_part(error_of([&] { apply_rotary_pos_emb(zeros({2, 4, 6}), t, ones({4, 6}, kFloat64)); }),
                       "apply_rotary_pos_emb: expected sin to have the input's dtype float32, got float64"));
  EXPECT_TRUE(has_part(error_of([&] { apply_rotary_pos_emb(zeros({6}), t, t); }),
                       "apply_rotary_pos_emb: expected input of shape (..., T, head_dim), got (6)"));
  const Tensor trained = ones({4, 6}).requires_grad_();
  EXPECT_TRUE(has_part(error_of([&] { apply_rotary_pos_emb(zeros({2, 4, 6}), trained, t); }),
                       "apply_rotary_pos_emb: cos requires grad, but the angles are constants"));
}

// ================================================================================================
// dropout
// ================================================================================================

TEST(Dropout, EvalOrPZeroReturnsTheInputWithoutDraws) {
  Generator gen(123);
  gen.random();  // not at a fresh state
  const std::vector<uint8_t> before = gen.get_state();
  const std::vector<uint8_t> default_before = default_generator().get_state();
  Tensor x = tensor({{1.0, -2.0}, {3.0, 4.0}}).requires_grad_();
  EXPECT_TRUE(dropout(x, 0.0, true, &gen).is_same(x));
  EXPECT_TRUE(dropout(x, 0.5, false, &gen).is_same(x));
  EXPECT_TRUE(dropout(x, 1.0, false, &gen).is_same(x));
  EXPECT_TRUE(dropout(x, 0.3, false).is_same(x));
  EXPECT_TRUE(dropout(zeros({0, 3}), 0.3, true, &gen).numel() == 0);
  EXPECT_EQ(gen.get_state(), before);
  EXPECT_EQ(default_generator().get_state(), default_before);
}

TEST(Dropout, POneGivesZerosWithoutDraws) {
  Generator gen(5);
  const std::vector<uint8_t> before = gen.get_state();
  Tensor x = tensor({{1.0, -2.0}, {3.0, 4.0}}).requires_grad_();
  Tensor y = dropout(x, 1.0, true, &gen);
  EXPECT_EQ(gen.get_state(), before);
  const std::vector<float> v = y.tolist<float>();
  for (float e : v) EXPECT_EQ(e, 0.0f);
  EXPECT_TRUE(std::signbit(v[1]));  // -2 * 0 = -0.0, as in PyTorch
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name, "MulBackward0");
  sum(y).backward();
  EXPECT_EQ(x.grad().tolist<double>(), (std::vector<double>{0, 0, 0, 0}));
}

uint32_t f32_bits_from_hex(const std::string& s) { return static_cast<uint32_t>(std::stoul(s, nullptr, 16)); }
uint64_t f64_bits_from_hex(const std::string& s) { return static_cast<uint64_t>(std::stoull(s, nullptr, 16)); }

// The values of t as bit patterns (float32 widened to 64 bits), row-major.
std::vector<uint64_t> bits_of(const Tensor& t) {
  std::vector<uint64_t> out;
  if (t.dtype() == kFloat32) {
    for (float v : t.tolist<float>()) out.push_back(std::bit_cast<uint32_t>(v));
  } else {
    for (double v : t.tolist<double>()) out.push_back(std::bit_cast<uint64_t>(v));
  }
  return out;
}

std::vector<uint64_t> bits_of(const json::Value& list, bool is_f32) {
  std::vector<uint64_t> out;
  for (const json::Value& v : list.as_array())
    out.push_back(is_f32 ? f32_bits_from_hex(v.as_string()) : f64_bits_from_hex(v.as_string()));
  return out;
}

TEST(Dropout, MatchesTorchBitForBit) {
  const json::Value doc = json::parse_file(TG_REFERENCE_DIR "/dropout_torch.json");
  int checked = 0;
  bool saw_p010 = false, saw_p015 = false;
  for (const json::Value& c : doc["cases"].as_array()) {
    const std::string id = c["id"].as_string();
    const bool f32 = c["dtype"].as_string() == "float32";
    const ScalarType dt = f32 ? kFloat32 : kFloat64;
    Shape shape;
    for (const json::Value& s : c["shape"].as_array()) shape.push_back(s.as_int64());
    const double p = c["p"].as_double();
    saw_p010 |= p == 0.1;
    saw_p015 |= p == 0.15;
    Generator gen(c["seed"].as_uint64());
    Tensor x = c["transposed"].as_bool() ? ones({shape[1], shape[0]}, dt).t() : ones(shape, dt);
    EXPECT_EQ(x.is_contiguous(), !c["transposed"].as_bool());
    x.requires_grad_();
    Tensor out = dropout(x, p, true, &gen);
    ASSERT_TRUE(out.grad_fn()) << id;
    EXPECT_EQ(out.grad_fn()->name, c["grad_fn"].as_string()) << id;
    EXPECT_EQ(bits_of(out), bits_of(c["out"], f32)) << id << ": dropout output";
    // The draws: 2 per element, so the next torch.rand(4) matches.
    std::vector<uint64_t> after;
    for (int i = 0; i < 4; ++i) after.push_back(std::bit_cast<uint32_t>(rng::uniform_f32(gen, 0.0f, 1.0f)));
    EXPECT_EQ(after, bits_of(c["after"], true)) << id << ": torch.rand(4) after dropout";
    Tensor g = arange(1, out.numel() + 1, 1, dt).reshape(shape);
    out.backward(g);
    EXPECT_EQ(bits_of(x.grad()), bits_of(c["grad"], f32)) << id << ": gradient";
    ++checked;
  }
  EXPECT_EQ(checked, 5);
  EXPECT_TRUE(saw_p010 && saw_p015);
  // The scale is 1.0f / f32(1 - p), not f32(1 / (1 - p)) (they differ for p = 0.15).
  EXPECT_EQ(std::bit_cast<uint32_t>(1.0f / static_cast<float>(1.0 - 0.15)), 0x3F969696u);
}

TEST(Dropout, UsesTheDefaultGeneratorWhenGivenNone) {
  manual_seed(42);
  Tensor a = dropout(ones({7, 13}), 0.15, true);
  Generator gen(42);
  Tensor b = dropout(ones({7, 13}), 0.15, true, &gen);
  EXPECT_EQ(bits_of(a), bits_of(b));
  EXPECT_EQ(default_generator().get_state(), gen.get_state());
}

template <class T>
void dropout_vs_naive(ScalarType dt, const std::string& label) {
  std::mt19937 rng(31);
  int cases = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const Shape shape = random_shape(rng, 1, 3, 9);
    const double p = 0.05 + 0.08 * trial;  // 0.05 .. 0.93
    Tensor x = random_tensor(shape, dt, rng);
    if (trial % 2) x = strided_copy(x);
    x.requires_grad_();
    Generator gen(1000 + trial);
    Generator gen_naive = gen;
    Tensor out = dropout(x, p, true, &gen);
    const std::vector<T> xv = x.tolist<T>();
    const int64_t N = x.numel();
    std::vector<T> ref(xv.size()), noise(xv.size());
    naive_kernels::dropout_forward_naive<T>(ref.data(), noise.data(), xv.data(), gen_naive, N, p);
    const std::string what = label + " dropout " + shape_str(shape) + " p=" + std::to_string(p);
    EXPECT_EQ(bits_of(out), bits_of(from_vector(to_double(ref), shape, dt))) << what;
    EXPECT_EQ(gen.get_state(), gen_naive.get_state()) << what << ": both made the same draws";
    const Tensor g = random_tensor(shape, dt, rng);
    out.backward(g);
    const std::vector<T> gv = g.tolist<T>();
    std::vector<T> dref(xv.size());
    naive_kernels::dropout_backward_naive<T>(dref.data(), gv.data(), noise.data(), N);
    EXPECT_EQ(bits_of(x.grad()), bits_of(from_vector(to_double(dref), shape, dt))) << what << " backward";
    // The plain loops (nn_loops) on raw buffers, too.
    Generator g1(trial), g2(trial);
    std::vector<T> o1(xv.size()), n1(xv.size()), o2(xv.size()), n2(xv.size()), d1(xv.size());
    nn_loops::dropout_forward<T>(o1.data(), n1.data(), xv.data(), g1, N, p);
    naive_kernels::dropout_forward_naive<T>(o2.data(), n2.data(), xv.data(), g2, N, p);
    EXPECT_EQ(o1, o2) << what;
    EXPECT_EQ(n1, n2) << what;
    nn_loops::dropout_backward<T>(d1.data(), gv.data(), n1.data(), N);
    naive_kernels::dropout_backward_naive<T>(dref.data(), gv.data(), n2.data(), N);
    EXPECT_EQ(d1, dref) << what;
    ++cases;
  }
  report_worst(label + " dropout fused vs naive, " + std::to_string(cases) + " cases (bit for bit)", 0.0);
}

TEST(Dropout, FusedMatchesNaiveF32) { dropout_vs_naive<float>(kFloat32, "f32"); }
TEST(Dropout, FusedMatchesNaiveF64) { dropout_vs_naive<double>(kFloat64, "f64"); }

TEST(Dropout, BackwardMatchesFiniteDifferencesF64) {
  std::mt19937 rng(17);
  Tensor x = random_tensor({4, 6}, kFloat64, rng).requires_grad_();
  // A fresh generator with the same seed per call: the same mask every time.
  const double worst = finite_difference_check(
      [](const std::vector<Tensor>& in) {
        Generator gen(9);
        return dropout(in[0], 0.3, true, &gen);
      },
      {x}, "dropout p=0.3");
  report_worst("dropout gradient vs finite differences (f64)", worst);
}

TEST(Dropout, ErrorMessages) {
  EXPECT_TRUE(has_part(error_of([] { dropout(ones({3}), 1.5, true); }),
             "dropout: dropout probability has to be between 0 and 1, but got 1.5"));
  EXPECT_TRUE(has_part(error_of([] { dropout(ones({3}), -0.25, false); }),
             "dropout: dropout probability has to be between 0 and 1, but got -0.25"));
  EXPECT_TRUE(has_part(error_of([] { dropout(ones({3}), std::nan(""), true); }),
             "dropout: dropout probability has to be between 0 and 1, but got nan"));
  EXPECT_TRUE(has_part(error_of([] { dropout(tensor({1, 2}), 0.5, true); }),
             "dropout: expected a floating point tensor (float32 or float64), got int64"));
}

}  // namespace
}  // namespace tg
