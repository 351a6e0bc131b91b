// autograd/ops/unary.cpp — elementwise math on floating tensors.
//
//   exp    y = e^x         dx = g * y
//   log    y = ln x        dx = g / x
//   sqrt   y = sqrt(x)     dx = g / (2 y)
//   abs    y = |x|         dx = g * sign(x)
//   clamp  y = min(max(x, lo), hi)   dx = g where lo <= x <= hi, else 0
//   sin    y = sin x       dx = g * cos x
//   cos    y = cos x       dx = -g * sin x
#include <cmath>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

Tensor exp(const Tensor& x) {
  Tensor y = elementwise_unary(x, "exp", [](auto v) { return std::exp(v); });
  record("ExpBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) { return Grads{mul(ctx.grad_out, ctx.saved[0])}; });
  return y;
}

Tensor log(const Tensor& x) {
  Tensor y = elementwise_unary(x, "log", [](auto v) { return std::log(v); });
  record("LogBackward0", {x}, y, {x}, [](const BackwardArgs& ctx) { return Grads{div(ctx.grad_out, ctx.saved[0])}; });
  return y;
}

Tensor sqrt(const Tensor& x) {
  Tensor y = elementwise_unary(x, "sqrt", [](auto v) { return std::sqrt(v); });
  record("SqrtBackward0", {x}, y, {y}, [](const BackwardArgs& ctx) {
    return Grads{div(ctx.grad_out, mul(ctx.saved[0], 2.0))};
  });
  return y;
}

Tensor abs(const Tensor& x) {
  check_defined(x, "abs", "input");
  if (x.dtype() == kInt64) {  // |INT64_MIN| wraps to itself, as PyTorch's
    return integer_unary(x, [](int64_t v) { return v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v; });
  }
  Tensor y = elementwise_unary(x, "abs", [](auto v) { return std::abs(v); });
  record("AbsBackward0", {x}, y, {x}, [](const BackwardArgs& ctx) {
    Tensor sign = elementwise_unary(ctx.saved[0], "abs", [](auto v) {
      using T = decltype(v);
      return static_cast<T>((v > 0) - (v < 0));
    });
    return Grads{mul(ctx.grad_out, sign)};
  });
  return y;
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  if (!lo && !hi) throw Error("clamp: at least one of 'min' or 'max' must not be None");
  const double l = lo.value_or(-INFINITY), h = hi.value_or(INFINITY);
  check_defined(x, "clamp", "input");
  if (x.dtype() == kInt64 && (!lo || *lo == std::floor(*lo)) && (!hi || *hi == std::floor(*hi))) {
    return integer_unary(x, [l, h](int64_t v) {  // integer bounds keep an int64 tensor int64
      const double c = std::min(std::max(static_cast<double>(v), l), h);
      return c == static_cast<double>(v) ? v : static_cast<int64_t>(c);
    });
  }
  Tensor y = elementwise_unary(x, "clamp", [l, h](auto v) {
    using T = decltype(v);
    if (std::isnan(v)) return v;
    return std::min(std::max(v, static_cast<T>(l)), static_cast<T>(h));
  });
  record("ClampBackward1", {x}, y, {x}, [l, h](const BackwardArgs& ctx) {
    Tensor inside = elementwise_unary(ctx.saved[0], "clamp", [l, h](auto v) {
      using T = decltype(v);
      return static_cast<T>(v >= static_cast<T>(l) && v <= static_cast<T>(h));
    });
    return Grads{mul(ctx.grad_out, inside)};
  });
  return y;
}

Tensor sin(const Tensor& x) {
  Tensor y = elementwise_unary(x, "sin", [](auto v) { return std::sin(v); });
  record("SinBackward0", {x}, y, {x}, [](const BackwardArgs& ctx) { return Grads{mul(ctx.grad_out, cos(ctx.saved[0]))}; });
  return y;
}

Tensor cos(const Tensor& x) {
  Tensor y = elementwise_unary(x, "cos", [](auto v) { return std::cos(v); });
  record("CosBackward0", {x}, y, {x}, [](const BackwardArgs& ctx) { return Grads{neg(mul(ctx.grad_out, sin(ctx.saved[0])))}; });
  return y;
}

}  // namespace tg
