// autograd/ops/arithmetic.cpp — + - * / pow neg, tensor-tensor (broadcast) and tensor-scalar.
//
//   add   out = a + alpha*b    da = g            db = alpha*g
//   sub   out = a - alpha*b    da = g            db = -alpha*g
//   mul   out = a * b          da = g*b          db = g*a
//   div   out = a / b          da = g/b          db = -g*a/b^2
//   pow   out = a^e            da = g*e*a^(e-1)  de = g*out*log(a)
//   neg   out = -a             da = -g
// Gradients of broadcast inputs are summed back to the input's shape by the tape. The backward
// formulas of add, sub, mul and div are functions (declared in ops/derivatives.h, each defined
// right after its op), which the in-place add_, mul_ and div_ (tensor.cpp) call too.
#include <cmath>
#include <concepts>

#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/ops/into_self.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace {

// The elementwise formulas, each written once: an op's tensor and number forms (a + b and a + 2,
// a - b and 2 - a) share one, and so one compiled set of loops. int64 wraps as PyTorch's; true
// division is for floating types only (div computes integers in float32).
constexpr auto plus = [](auto x, auto y) { return wrapping_add(x, y); };
constexpr auto minus = [](auto x, auto y) { return wrapping_sub(x, y); };
constexpr auto times = [](auto x, auto y) { return wrapping_mul(x, y); };
constexpr auto divided_by = [](std::floating_point auto x, std::floating_point auto y) { return x / y; };
constexpr auto to_the = [](std::floating_point auto x, std::floating_point auto y) { return std::pow(x, y); };

// bool < integer < floating
int kind_rank(ScalarType t) { return t == kBool ? 0 : (is_floating(t) ? 2 : 1); }

// The result dtype of a binary op. A 0-d tensor beside a dimensioned one decides the dtype only
// if it is of a higher kind (PyTorch: x_float32 * torch.tensor(2.0, dtype=float64) stays float32).
ScalarType arithmetic_dtype(const Tensor& a, const Tensor& b) {
  if (a.dim() > 0 && b.dim() == 0 && kind_rank(b.dtype()) <= kind_rank(a.dtype())) return a.dtype();
  if (b.dim() > 0 && a.dim() == 0 && kind_rank(a.dtype()) <= kind_rank(b.dtype())) return b.dtype();
  return promote_types(a.dtype(), b.dtype());
}

// alpha for integral results must be a whole number (PyTorch refuses any float alpha there; we
// accept a whole one, as our default alpha is written 1.0).
void check_alpha(ScalarType dt, const Scalar& alpha, const char* op) {
  if (is_floating(dt) || alpha.integral || alpha.value == std::trunc(alpha.value)) return;
  throw Error(std::string(op) + ": for integral input tensors, argument alpha must not be a floating point number, got " +
              number_str(alpha.value));
}

// out = a + alpha*b (or a - alpha*b when subtract) elementwise in dtype dt; int64 wraps as
// PyTorch's and uses alpha's exact integer value. Written into `into` when given (elementwise_binary).
Tensor add_scaled(const Tensor& a, const Tensor& b, ScalarType dt, const Scalar& alpha, bool subtract, const char* op,
                  const Tensor& into = Tensor()) {
  const double s = subtract ? -alpha.value : alpha.value;
  if (s == 1.0) return elementwise_binary(a, b, dt, op, plus, into);
  if (s == -1.0 && dt != kBool) return elementwise_binary(a, b, dt, op, minus, into);
  int64_t k = 0;  // alpha as int64 (negated when subtracting), for int64 results
  if (dt == kInt64) {
    k = checked_cast<int64_t>(alpha, op);
    if (subtract) k = wrapping_sub<int64_t>(0, k);
  }
  return elementwise_binary(
      a, b, dt, op,
      [s, k](auto x, auto y) {
        using T = decltype(x);
        if constexpr (std::is_same_v<T, int64_t>) return wrapping_add(x, wrapping_mul(k, y));
        else return static_cast<T>(x + static_cast<T>(s) * y);
      },
      into);
}

// a * b for a number b, written into `into` when given.
Tensor mul_by_number(const Tensor& a, Scalar b, const Tensor& into = Tensor()) {
  return elementwise_binary(a, scalar_like(b, a, "mul"), scalar_dtype(b, a), "mul", times, into);
}

}  // namespace

// --- into self's own buffer (add_ and mul_, tensor.cpp) -------------------------------------------

bool can_write_into_self(const Tensor& self, const Tensor& other) {
  return is_floating(self.dtype()) && self.is_contiguous() && arithmetic_dtype(self, other) == self.dtype() &&
         !other.is_alias_of(self);
}

bool can_write_into_self(const Tensor& self, Scalar other) {
  return is_floating(self.dtype()) && self.is_contiguous() && scalar_dtype(other, self) == self.dtype();
}

void add_into_self(const Tensor& self, const Tensor& other, Scalar alpha) {
  add_scaled(self, other, self.dtype(), alpha, false, "add_", self);
}

void mul_into_self(const Tensor& self, Scalar other) { mul_by_number(self, other, self); }

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  const ScalarType dt = arithmetic_dtype(a, b);
  check_alpha(dt, alpha, "add");
  Tensor out = add_scaled(a, b, dt, alpha, false, "add");
  const double s = alpha.value;
  record("AddBackward0", {a, b}, out, {}, [s](const BackwardArgs& ctx) { return add_backward(ctx, s); });
  return out;
}

// da = g, db = alpha*g (sub's too, with -alpha)
Grads add_backward(const BackwardArgs& ctx, double alpha) {
  return Grads{ctx.grad_out, alpha == 1.0 ? ctx.grad_out : mul(ctx.grad_out, alpha)};
}

Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  const ScalarType dt = arithmetic_dtype(a, b);
  if (dt == kBool) throw Error("sub: subtraction, the `-` operator, with two bool tensors is not supported");
  check_alpha(dt, alpha, "sub");
  const double s = alpha.value;
  Tensor out = add_scaled(a, b, dt, alpha, true, "sub");
  record("SubBackward0", {a, b}, out, {}, [s](const BackwardArgs& ctx) { return add_backward(ctx, -s); });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = elementwise_binary(a, b, arithmetic_dtype(a, b), "mul", times);
  // save each factor only if the other one needs its gradient
  const Tensor keep_b = a.requires_grad() ? b : Tensor();
  const Tensor keep_a = b.requires_grad() ? a : Tensor();
  record("MulBackward0", {a, b}, out, {keep_a, keep_b}, mul_backward);
  return out;
}

// da = g*b, db = g*a; saved {a, b}
Grads mul_backward(const BackwardArgs& ctx) {
  return Grads{ctx.needs_grad[0] ? mul(ctx.grad_out, ctx.saved[1]) : Tensor(),
               ctx.needs_grad[1] ? mul(ctx.grad_out, ctx.saved[0]) : Tensor()};
}

Tensor div(const Tensor& a, const Tensor& b) {
  ScalarType dt = arithmetic_dtype(a, b);
  if (!is_floating(dt)) dt = kFloat32;  // true division, as PyTorch's `/`
  Tensor out = elementwise_binary(a, b, dt, "div", divided_by);
  const Tensor keep_a = b.requires_grad() ? a : Tensor();
  record("DivBackward0", {a, b}, out, {keep_a, b}, div_backward);
  return out;
}

// da = g/b, db = -g*a/b^2; saved {a, b}
Grads div_backward(const BackwardArgs& ctx) {
  const Tensor& b = ctx.saved[1];
  return Grads{ctx.needs_grad[0] ? div(ctx.grad_out, b) : Tensor(),
               ctx.needs_grad[1] ? neg(div(mul(ctx.grad_out, ctx.saved[0]), mul(b, b))) : Tensor()};
}

Tensor neg(const Tensor& a) {
  check_defined(a, "neg", "input");
  if (a.dtype() == kBool) throw Error("neg: negation, the `-` operator, on a bool tensor is not supported");
  Tensor out = make_empty(a.sizes(), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_unary<T, T>(out, a, [](T v) {  // -0 for +0 (PyTorch's), and int64's wrapping minimum
      if constexpr (std::is_integral_v<T>) return wrapping_sub(T(0), v);
      else return static_cast<T>(-v);
    });
  });
  record("NegBackward0", {a}, out, {}, [](const BackwardArgs& ctx) { return Grads{neg(ctx.grad_out)}; });
  return out;
}

// --- tensor and scalar ---------------------------------------------------------------------------

Tensor add(const Tensor& a, Scalar b) {
  Tensor out = elementwise_binary(a, scalar_like(b, a, "add"), scalar_dtype(b, a), "add", plus);
  record("AddBackward0", {a}, out, {}, [](const BackwardArgs& ctx) { return Grads{ctx.grad_out}; });
  return out;
}

Tensor sub(const Tensor& a, Scalar b) {
  Tensor out = elementwise_binary(a, scalar_like(b, a, "sub"), scalar_dtype(b, a), "sub", minus);
  record("SubBackward0", {a}, out, {}, [](const BackwardArgs& ctx) { return Grads{ctx.grad_out}; });
  return out;
}

Tensor mul(const Tensor& a, Scalar b) {
  Tensor out = mul_by_number(a, b);
  const double s = b.value;
  record("MulBackward0", {a}, out, {}, [s](const BackwardArgs& ctx) { return mul_scalar_backward(ctx, s); });
  return out;
}

// da = g*s
Grads mul_scalar_backward(const BackwardArgs& ctx, double s) { return Grads{mul(ctx.grad_out, s)}; }

Tensor div(const Tensor& a, Scalar b) {
  ScalarType dt = scalar_dtype(b, a);
  if (!is_floating(dt)) dt = kFloat32;
  Tensor out = elementwise_binary(a, scalar_like(b, a, "div"), dt, "div", divided_by);
  const double s = b.value;
  record("DivBackward0", {a}, out, {}, [s](const BackwardArgs& ctx) { return div_scalar_backward(ctx, s); });
  return out;
}

// da = g/s
Grads div_scalar_backward(const BackwardArgs& ctx, double s) { return Grads{div(ctx.grad_out, s)}; }

Tensor rsub(const Tensor& a, Scalar b) {
  Tensor out = elementwise_binary(scalar_like(b, a, "rsub"), a, scalar_dtype(b, a), "rsub", minus);
  // d/da (b - a) = -1
  record("RsubBackward1", {a}, out, {}, [](const BackwardArgs& ctx) { return Grads{neg(ctx.grad_out)}; });
  return out;
}

Tensor rdiv(const Tensor& a, Scalar b) {
  ScalarType dt = scalar_dtype(b, a);
  if (!is_floating(dt)) dt = kFloat32;
  Tensor out = elementwise_binary(scalar_like(b, a, "rdiv"), a, dt, "rdiv", divided_by);
  // d/da (b / a) = -b / a^2 = -out / a
  record("MulBackward0", {a}, out, {a, out}, [](const BackwardArgs& ctx) {
    return Grads{neg(div(mul(ctx.grad_out, ctx.saved[1]), ctx.saved[0]))};
  });
  return out;
}

Tensor pow(const Tensor& a, Scalar exponent) {
  check_defined(a, "pow", "input");
  const double e = exponent.value;
  if (a.dtype() == kInt64 && exponent.integral) {  // int64 ** int stays int64, as PyTorch's
    if (e < 0) throw Error("pow: integers to negative integer powers are not allowed (exponent " + std::to_string(e) + ")");
    const uint64_t n = static_cast<uint64_t>(e);
    return integer_unary(a, [n](int64_t v) {
      uint64_t result = 1, base = static_cast<uint64_t>(v);  // wraps on overflow, without UB
      for (uint64_t k = n; k > 0; k >>= 1, base *= base)
        if (k & 1) result *= base;
      return static_cast<int64_t>(result);
    });
  }
  Tensor out = elementwise_unary(a, "pow", [e](auto v) {
    using T = decltype(v);
    if (e == 2.0) return static_cast<T>(v * v);
    return static_cast<T>(std::pow(v, static_cast<T>(e)));
  });
  // d/da a^e = e * a^(e-1)
  record("PowBackward0", {a}, out, {a}, [e](const BackwardArgs& ctx) {
    if (e == 0.0) return Grads{zeros_like(ctx.grad_out)};
    return Grads{mul(ctx.grad_out, mul(pow(ctx.saved[0], e - 1.0), e))};
  });
  return out;
}

Tensor pow(const Tensor& a, const Tensor& exponent) {
  ScalarType dt = arithmetic_dtype(a, exponent);
  if (!is_floating(dt)) throw Error("pow: tensor ** tensor is only supported for floating point tensors here, got " +
                                    std::string(dtype_name(a.dtype())) + " and " + dtype_name(exponent.dtype()));
  Tensor out = elementwise_binary(a, exponent, dt, "pow", to_the);
  // da = g * e * a^(e-1);  de = g * out * log(a)
  record("PowBackward1", {a, exponent}, out, {a, exponent, out}, [](const BackwardArgs& ctx) {
    return Grads{ctx.needs_grad[0] ? mul(ctx.grad_out, mul(ctx.saved[1], pow(ctx.saved[0], sub(ctx.saved[1], 1.0)))) : Tensor(),
                 ctx.needs_grad[1] ? mul(ctx.grad_out, mul(ctx.saved[2], log(ctx.saved[0]))) : Tensor()};
  });
  return out;
}

// --- operators -----------------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator+(Scalar a, const Tensor& b) { return add(b, a); }
Tensor operator-(Scalar a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(Scalar a, const Tensor& b) { return mul(b, a); }
Tensor operator/(Scalar a, const Tensor& b) { return rdiv(b, a); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace tg
