// tests/autograd/test_activation_kernels.cpp — the float32 loops behind gelu(tanh), tanh and
// sigmoid (autograd/kernels/activation_kernels.h) against their plain twins (std::tanh, std::exp),
// and the choice between the two paths inside the ops.
//
//   * fast (on each instruction set the CPU has) vs twin elementwise, |fast - twin| <= atol + rtol * |twin|, on a dense
//   grid over
//     [-12, 12], normal draws, and large and special inputs (1e4, 1e20, FLT_MAX, inf, nan,
//     subnormals); each prints its worst error on a "[ worst    ]" line;
//   * the portable (SSE2 on x86-64) and AVX2 loops give the same bits (skipped on a CPU without AVX2);
//   * a contiguous float32 tensor takes the fast loops through autograd, a strided one the twin.
// The float64 gradient of gelu(tanh) is checked by finite differences in test_gradcheck_ops.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/kernels/activation_kernels.h"
#include "autograd/ops/nn_loops.h"
#include "test_util.h"

namespace tg {
namespace {

namespace K = activation_kernels;
using test::same_bytes;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Inputs: a grid of step 1e-4 over [-12, 12] (past |x| = 5 gelu's tanh is +-1 in float), normal
// draws of scale 3, and the large and special values.
std::vector<float> activation_inputs() {
  std::vector<float> xs;
  for (int i = -120000; i <= 120000; ++i) xs.push_back(static_cast<float>(i * 1e-4));
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int i = 0; i < 100000; ++i) xs.push_back(normal(rng));
  const float big = std::numeric_limits<float>::max();
  for (float v : {20.0f, 100.0f, 1e4f, 1e13f, 1e20f, big, kInf, std::numeric_limits<float>::denorm_min(), 1e-30f,
                  0.0f, std::numeric_limits<float>::quiet_NaN()}) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  return xs;
}

// dout values for the backward: uniform in [-2, 2], with 0 and 1 among them.
std::vector<float> grad_inputs(size_t n) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> g(n);
  for (float& v : g) v = u(rng);
  g[0] = 0.0f;
  g[1] = 1.0f;
  return g;
}

// |got - want| <= atol + rtol |want| everywhere (nan matches nan, inf the same inf); names the
// first failures, prints the worst |got - want| over the finite pairs.
void expect_close(const std::string& what, const std::vector<float>& xs, const std::vector<float>& got,
                  const std::vector<float>& want, double atol, double rtol) {
  double worst = 0;
  float worst_x = 0;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool same_special = (std::isnan(g) && std::isnan(w)) || (std::isinf(w) && g == w);
    if (same_special) continue;
    const double err = std::abs(g - w);
    if (!(err <= atol + rtol * std::abs(w)) && ++failures <= 10) {
      ADD_FAILURE() << what << " at x = " << xs[i] << " (index " << i << "): got " << g << ", twin " << w
                    << ", |diff| " << err << " > " << atol << " + " << rtol << " * |twin|";
    }
    if (err > worst) worst = err, worst_x = xs[i];
  }
  std::cout << "[ worst    ] " << what << ": |fast - twin| " << worst << " at x = " << worst_x << "\n";
}

int64_t size_of(const std::vector<float>& v) { return static_cast<int64_t>(v.size()); }

// The derivative's 1 - t^2 cancels as |t| nears 1: near x = +-5, where 0.5 x k (1 + 3 c x^2)
// is about 9, one ulp of t (6e-8) moves gelu' by 1e-6, times |dout| <= 2. std::tanh and
// vec_math::tanh are each within 2 ulp, so the fast path and its twin may differ by a few of those.
constexpr double kGradAtol = 2e-5, kGradRtol = 1e-5;

// The instruction sets this CPU can run: the fast loops are checked on each.
std::vector<K::Isa> isas() {
  std::vector<K::Isa> out{K::Isa::kPortable};
  if (kernels::isa_available(K::Isa::kAvx2)) out.push_back(K::Isa::kAvx2);
  return out;
}
const char* isa_label(K::Isa isa) { return isa == K::Isa::kAvx2 ? " (AVX2)" : " (portable)"; }

TEST(ActivationKernels, GeluTanhForwardMatchesPlainTwin) {
  const std::vector<float> xs = activation_inputs();
  std::vector<float> fast(xs.size()), twin(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) twin[i] = nn_loops::gelu_tanh_reference(xs[i]);
  for (K::Isa isa : isas()) {
    K::gelu_tanh_forward(fast.data(), xs.data(), size_of(xs), isa);
    expect_close(std::string("gelu(tanh) forward") + isa_label(isa), xs, fast, twin, 1e-6, 1e-6);
  }
}

TEST(ActivationKernels, GeluTanhBackwardMatchesPlainTwin) {
  const std::vector<float> xs = activation_inputs();
  const std::vector<float> g = grad_inputs(xs.size());
  std::vector<float> fast(xs.size()), twin(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) twin[i] = g[i] * nn_loops::gelu_tanh_derivative_reference(xs[i]);
  for (K::Isa isa : isas()) {
    K::gelu_tanh_backward(fast.data(), g.data(), xs.data(), size_of(xs), isa);
    expect_close(std::string("gelu(tanh) backward") + isa_label(isa), xs, fast, twin, kGradAtol, kGradRtol);
  }
}

TEST(ActivationKernels, TanhAndSigmoidMatchPlainTwins) {
  const std::vector<float> xs = activation_inputs();
  std::vector<float> fast(xs.size()), tanh_twin(xs.size()), sigmoid_twin(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) tanh_twin[i] = nn_loops::tanh_reference(xs[i]);
  for (size_t i = 0; i < xs.size(); ++i) sigmoid_twin[i] = nn_loops::sigmoid_reference(xs[i]);
  for (K::Isa isa : isas()) {
    // std::tanh and vec_math::tanh are each within 2 ulp of the true value, std::exp and
    // vec_math::exp within 1: at most 4 ulp apart, 4 * 2^-23 relative.
    K::tanh_forward(fast.data(), xs.data(), size_of(xs), isa);
    expect_close(std::string("tanh") + isa_label(isa), xs, fast, tanh_twin, 0, 4.8e-7);
    K::sigmoid_forward(fast.data(), xs.data(), size_of(xs), isa);
    expect_close(std::string("sigmoid") + isa_label(isa), xs, fast, sigmoid_twin, 0, 4.8e-7);
  }
}

// silu and SwiGLU's product: the formulas of ops/activation.cpp's references on vec_math's exp
// (within 1 ulp of std::exp's, which is within 1 of the truth): a few ulp apart, near the zeros of
// silu' (x about -1.28) a little more in absolute terms, as gelu's backward.
TEST(ActivationKernels, SiluAndSwigluMatchPlainTwins) {
  const std::vector<float> xs = activation_inputs();
  const std::vector<float> g = grad_inputs(xs.size()), up = grad_inputs(xs.size() + 7);
  const int64_t n = size_of(xs);
  std::vector<float> silu_twin(xs.size()), dsilu_twin(xs.size()), y_twin(xs.size()), dgate_twin(xs.size()),
      dup_twin(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i], s = nn_loops::sigmoid_reference(x);
    silu_twin[i] = x / (1.0f + std::exp(-x));
    dsilu_twin[i] = g[i] * (s * (1 + x * (1 - s)));
  }
  nn_loops::swiglu_forward_reference<float>(y_twin.data(), xs.data(), up.data(), n);
  nn_loops::swiglu_backward_reference<float>(dgate_twin.data(), dup_twin.data(), g.data(), xs.data(), up.data(), n);
  for (K::Isa isa : isas()) {
    std::vector<float> a(xs.size()), b(xs.size());
    K::silu_forward(a.data(), xs.data(), n, isa);
    expect_close(std::string("silu") + isa_label(isa), xs, a, silu_twin, 1e-6, 1e-6);
    K::silu_backward(a.data(), g.data(), xs.data(), n, isa);
    expect_close(std::string("silu backward") + isa_label(isa), xs, a, dsilu_twin, kGradAtol, kGradRtol);
    K::swiglu_forward(a.data(), xs.data(), up.data(), n, isa);
    expect_close(std::string("swiglu") + isa_label(isa), xs, a, y_twin, 1e-6, 1e-6);
    K::swiglu_backward(a.data(), b.data(), g.data(), xs.data(), up.data(), n, isa);
    expect_close(std::string("swiglu dgate") + isa_label(isa), xs, a, dgate_twin, kGradAtol, kGradRtol);
    expect_close(std::string("swiglu dup") + isa_label(isa), xs, b, dup_twin, 1e-6, 1e-6);
  }
}

// Same bits, or both nan (a nan's payload may come from either operand of a commuted add).
::testing::AssertionResult same_floats(const char* what, const std::vector<float>& xs, const std::vector<float>& a,
                                       const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) {
      return ::testing::AssertionFailure() << what << " at x = " << xs[i] << " (index " << i << "): portable "
                                           << a[i] << ", AVX2 " << b[i];
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(ActivationKernels, GeluTanhPortableAndAvx2LoopsGiveTheSameBits) {
  if (!kernels::isa_available(K::Isa::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2";
  // Every 4099th float bit pattern (all signs, binades, nans), then the grid and the draws. An
  // odd count leaves a scalar tail after the vector loop, compared too.
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (float v : activation_inputs()) xs.push_back(v);
  if (xs.size() % 2 == 0) xs.push_back(0.5f);
  const std::vector<float> g = grad_inputs(xs.size());
  const int64_t n = size_of(xs);
  std::vector<float> base(xs.size()), avx2(xs.size());
  K::gelu_tanh_forward(base.data(), xs.data(), n, K::Isa::kPortable);
  K::gelu_tanh_forward(avx2.data(), xs.data(), n, K::Isa::kAvx2);
  EXPECT_TRUE(same_floats("gelu(tanh) forward", xs, base, avx2));
  K::gelu_tanh_backward(base.data(), g.data(), xs.data(), n, K::Isa::kPortable);
  K::gelu_tanh_backward(avx2.data(), g.data(), xs.data(), n, K::Isa::kAvx2);
  EXPECT_TRUE(same_floats("gelu(tanh) backward", xs, base, avx2));
  K::tanh_forward(base.data(), xs.data(), n, K::Isa::kPortable);
  K::tanh_forward(avx2.data(), xs.data(), n, K::Isa::kAvx2);
  EXPECT_TRUE(same_floats("tanh", xs, base, avx2));
  K::sigmoid_forward(base.data(), xs.data(), n, K::Isa::kPortable);
  K::sigmoid_forward(avx2.data(), xs.data(), n, K::Isa::kAvx2);
  EXPECT_TRUE(same_floats("sigmoid", xs, base, avx2));
}

// feed_forward's backward pass (a = gelu(h), and dh = da * gelu'(h) over da) gives the bits of the
// two loops it replaces, on every copy the CPU runs, with a stored as float32 or rounded to
// bfloat16; and the AVX-512 copies (what runs on such a CPU) give the AVX2 copies' bits.
TEST(ActivationKernels, GeluTanhValueAndBackwardIsForwardAndBackwardBitForBit) {
  std::vector<float> xs;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  for (float v : activation_inputs()) xs.push_back(v);
  const std::vector<float> g = grad_inputs(xs.size());
  const int64_t n = size_of(xs);
  std::vector<K::Isa> all = isas();
  if (kernels::isa_available(K::Isa::kAvx512)) all.push_back(K::Isa::kAvx512);
  std::vector<float> forward_avx2, backward_avx2;
  for (K::Isa isa : all) {
    std::vector<float> forward(xs.size()), backward(xs.size()), value(xs.size()), grad = g;
    K::gelu_tanh_forward(forward.data(), xs.data(), n, isa);
    K::gelu_tanh_backward(backward.data(), g.data(), xs.data(), n, isa);
    K::gelu_tanh_value_and_backward(value.data(), grad.data(), xs.data(), n, isa);
    const std::string on = std::string(" on ") + kernels::isa_name(isa);
    EXPECT_TRUE(same_floats(("value" + on).c_str(), xs, forward, value));
    EXPECT_TRUE(same_floats(("gradient" + on).c_str(), xs, backward, grad));
    // the values stored rounded to bfloat16 (autocast's feed_forward): BFloat16's bits of them
    std::vector<BFloat16> rounded(xs.size()), rounded_value(xs.size());
    std::vector<float> grad_again = g;
    K::gelu_tanh_forward_rounded(rounded.data(), xs.data(), n, isa);
    K::gelu_tanh_value_and_backward(rounded_value.data(), grad_again.data(), xs.data(), n, isa);
    for (size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(rounded[i].bits, BFloat16(forward[i]).bits) << "rounded forward" << on << " at x = " << xs[i];
      ASSERT_EQ(rounded_value[i].bits, BFloat16(forward[i]).bits) << "rounded value" << on << " at x = " << xs[i];
    }
    EXPECT_TRUE(same_floats(("gradient beside a rounded value" + on).c_str(), xs, backward, grad_again));
    if (isa == K::Isa::kAvx2) {
      forward_avx2 = forward;
      backward_avx2 = backward;
    } else if (isa == K::Isa::kAvx512) {
      EXPECT_TRUE(same_floats("forward, AVX2 vs AVX-512", xs, forward_avx2, forward));
      EXPECT_TRUE(same_floats("backward, AVX2 vs AVX-512", xs, backward_avx2, backward));
    }
  }
}

// --- through the ops: which path a tensor takes --------------------------------------------------

// The values of xs as a (64, n/64) float32 tensor, and g likewise.
Tensor as_tensor(const std::vector<float>& v, int64_t rows) {
  return from_vector(std::vector<double>(v.begin(), v.end()), {rows, size_of(v) / rows}, kFloat32);
}

// xs in a (64, C) float32 tensor read through a transposed view of a (C, 64) buffer: the same
// values, not contiguous.
Tensor transposed_copy(const Tensor& t) { return t.t().contiguous().t(); }

TEST(ActivationKernels, GeluTanhOpTakesTheFastLoopsForContiguousFloat32AndTheTwinOtherwise) {
  const FastKernelsGuard fast_on(true);  // the fast loops, whatever TG_FAST_KERNELS says
  std::vector<float> xs = activation_inputs();
  xs.resize(xs.size() / 64 * 64);
  const std::vector<float> gs = grad_inputs(xs.size());
  const int64_t n = size_of(xs);
  std::vector<float> fast_y(xs.size()), fast_dx(xs.size()), twin_y(xs.size()), twin_dx(xs.size());
  K::gelu_tanh_forward(fast_y.data(), xs.data(), n);
  K::gelu_tanh_backward(fast_dx.data(), gs.data(), xs.data(), n);
  for (size_t i = 0; i < xs.size(); ++i) twin_y[i] = nn_loops::gelu_tanh_reference(xs[i]);
  for (size_t i = 0; i < xs.size(); ++i) twin_dx[i] = gs[i] * nn_loops::gelu_tanh_derivative_reference(xs[i]);
  const Tensor g = as_tensor(gs, 64);

  Tensor x = test::leaf(as_tensor(xs, 64));
  Tensor y = gelu(x, "tanh");
  y.backward(g);
  EXPECT_TRUE(same_bytes(y.detach(), as_tensor(fast_y, 64)));
  EXPECT_TRUE(same_bytes(x.grad(), as_tensor(fast_dx, 64)));

  Tensor strided = test::leaf(transposed_copy(as_tensor(xs, 64)));
  ASSERT_FALSE(strided.is_contiguous());
  Tensor y2 = gelu(strided, "tanh");
  y2.backward(transposed_copy(g));
  EXPECT_TRUE(same_bytes(y2.detach(), as_tensor(twin_y, 64)));
  EXPECT_TRUE(same_bytes(strided.grad(), as_tensor(twin_dx, 64)));
}

TEST(ActivationKernels, TanhAndSigmoidOpsTakeTheFastLoopsAndFuseTheirBackward) {
  const FastKernelsGuard fast_on(true);  // the fast loops, whatever TG_FAST_KERNELS says
  std::vector<float> xs = activation_inputs();
  xs.resize(xs.size() / 64 * 64);
  const int64_t n = size_of(xs);
  const Tensor g = as_tensor(grad_inputs(xs.size()), 64);
  std::vector<float> fast(xs.size());

  K::tanh_forward(fast.data(), xs.data(), n);
  Tensor x = test::leaf(as_tensor(xs, 64));
  Tensor y = tg::tanh(x);
  y.backward(g);
  EXPECT_TRUE(same_bytes(y.detach(), as_tensor(fast, 64)));
  EXPECT_TRUE(same_bytes(x.grad(), mul(g, rsub(mul(y.detach(), y.detach()), 1))));  // g * (1 - y^2), two passes

  K::sigmoid_forward(fast.data(), xs.data(), n);
  Tensor x2 = test::leaf(as_tensor(xs, 64));
  Tensor s = sigmoid(x2);
  s.backward(g);
  EXPECT_TRUE(same_bytes(s.detach(), as_tensor(fast, 64)));
  const Tensor sd = s.detach();
  EXPECT_TRUE(same_bytes(x2.grad(), mul(g, mul(sd, rsub(sd, 1)))));  // g * (s (1 - s)), two passes
}

}  // namespace
}  // namespace tg
