// autograd/ops/activation.cpp — tanh, sigmoid, relu, gelu.
//
//   tanh     y = tanh x                    dx = g * (1 - y^2)
//   sigmoid  y = 1 / (1 + e^-x)            dx = g * y * (1 - y)
//   relu     y = max(x, 0)                 dx = g * (y > 0)
//   gelu     y = x * Phi(x)                dx = g * (Phi(x) + x * phi(x))
//   gelu tanh  y = x/2 (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2/pi)
//              dx = g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3*0.044715 x^2))
#include <cmath>
#include <numbers>

#include "autograd/ops.h"
#include "autograd/ops/loops.h"
#include "autograd/tape.h"

namespace tg {

Tensor tanh(const Tensor& x) {
  Tensor y = elementwise_unary(x, "tanh", [](auto v) { return std::tanh(v); });
  record("TanhBackward0", {x}, y, {y}, [](const BackwardArgs& a) {
    Tensor dy = elementwise_unary(a.saved[0], "tanh", [](auto t) { return 1 - t * t; });
    return Grads{mul(a.grad_out, dy)};
  });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = elementwise_unary(x, "sigmoid", [](auto v) {
    using T = decltype(v);
    return static_cast<T>(1) / (static_cast<T>(1) + std::exp(-v));
  });
  record("SigmoidBackward0", {x}, y, {y}, [](const BackwardArgs& a) {
    Tensor dy = elementwise_unary(a.saved[0], "sigmoid", [](auto s) { return s * (1 - s); });
    return Grads{mul(a.grad_out, dy)};
  });
  return y;
}

Tensor relu(const Tensor& x) {
  check_defined(x, "relu", "input");
  if (x.dtype() == kInt64) return integer_unary(x, [](int64_t v) { return v > 0 ? v : int64_t{0}; });
  Tensor y = elementwise_unary(x, "relu", [](auto v) {
    using T = decltype(v);
    return v > T(0) ? v : (std::isnan(v) ? v : T(0));
  });
  record("ReluBackward0", {x}, y, {y}, [](const BackwardArgs& a) {
    Tensor positive = elementwise_unary(a.saved[0], "relu", [](auto v) {
      using T = decltype(v);
      return static_cast<T>(v > T(0));
    });
    return Grads{mul(a.grad_out, positive)};
  });
  return y;
}

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluCubic = 0.044715;
}  // namespace

Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    throw Error("gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  const bool use_tanh = approximate == "tanh";
  Tensor y = elementwise_unary(x, "gelu", [use_tanh](auto v) {
    using T = decltype(v);
    if (use_tanh) {
      const T inner = static_cast<T>(kSqrt2OverPi) * (v + static_cast<T>(kGeluCubic) * v * v * v);
      return static_cast<T>(0.5) * v * (static_cast<T>(1) + std::tanh(inner));
    }
    return v * static_cast<T>(0.5) * (static_cast<T>(1) + std::erf(v * static_cast<T>(std::numbers::sqrt2 / 2)));
  });
  record("GeluBackward0", {x}, y, {x}, [use_tanh](const BackwardArgs& a) {
    Tensor dy = elementwise_unary(a.saved[0], "gelu", [use_tanh](auto v) {
      using T = decltype(v);
      if (use_tanh) {
        const T k = static_cast<T>(kSqrt2OverPi), c = static_cast<T>(kGeluCubic);
        const T t = std::tanh(k * (v + c * v * v * v));
        return static_cast<T>(0.5) * (1 + t) + static_cast<T>(0.5) * v * (1 - t * t) * k * (1 + 3 * c * v * v);
      }
      const T cdf = static_cast<T>(0.5) * (1 + std::erf(v * static_cast<T>(std::numbers::sqrt2 / 2)));
      const T pdf = std::exp(static_cast<T>(-0.5) * v * v) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
      return cdf + v * pdf;
    });
    return Grads{mul(a.grad_out, dy)};
  });
  return y;
}

}  // namespace tg
