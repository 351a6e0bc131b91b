// autograd/ops/compare.cpp — comparisons (giving bool), where, masked_fill, allclose.
//
//   where(c, a, b)         da = g where c, else 0;   db = g where !c, else 0
//   masked_fill(x, m, v)   dx = g where !m, else 0
//   maximum(a, b)          da = g where a > b, g/2 where a == b, else 0 (NaN: g to both)
//   minimum(a, b)          da = g where a < b, g/2 where a == b, else 0
#include <cmath>
#include <concepts>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace {

template <class F>
Tensor compare(const Tensor& a, const Tensor& b, const char* op, F f) {
  return elementwise_compare(a, b, promote_types(a.dtype(), b.dtype()), op, f);
}

}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", [](auto x, auto y) { return x == y; }); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(a, b, "ne", [](auto x, auto y) { return x != y; }); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(a, b, "lt", [](auto x, auto y) { return x < y; }); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(a, b, "le", [](auto x, auto y) { return x <= y; }); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(a, b, "gt", [](auto x, auto y) { return x > y; }); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(a, b, "ge", [](auto x, auto y) { return x >= y; }); }
Tensor eq(const Tensor& a, Scalar b) { return eq(a, scalar_like(b, a, "eq")); }
Tensor ne(const Tensor& a, Scalar b) { return ne(a, scalar_like(b, a, "ne")); }
Tensor lt(const Tensor& a, Scalar b) { return lt(a, scalar_like(b, a, "lt")); }
Tensor le(const Tensor& a, Scalar b) { return le(a, scalar_like(b, a, "le")); }
Tensor gt(const Tensor& a, Scalar b) { return gt(a, scalar_like(b, a, "gt")); }
Tensor ge(const Tensor& a, Scalar b) { return ge(a, scalar_like(b, a, "ge")); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, Scalar b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, Scalar b) { return ne(a, b); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, b); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, b); }

Tensor logical_not(const Tensor& a) {
  check_defined(a, "logical_not", "input");
  Tensor out = make_empty(a.sizes(), kBool);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_unary<bool, T>(out, a, [](T v) { return v == T(0); });
  });
  return out;
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_dtype(condition, kBool, "where", "condition");
  check_defined(a, "where", "input");
  check_defined(b, "where", "other");
  const Shape shape = broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes(), "where"), b.sizes(), "where");
  const ScalarType dt = promote_types(a.dtype(), b.dtype());
  // where(c, a, b) = select a or b; run as: out = b, then out[c] = a
  Tensor out = make_empty(shape, dt);
  {
    NoGradGuard no_grad;
    copy_values(out, b, "where");
    const Shape sc = broadcast_strides(condition, shape);
    const Tensor ac = a.dtype() == dt ? a : a.detach().to(dt);
    const Shape sa = broadcast_strides(ac, shape);
    const Shape so = contiguous_strides(shape);
    visit_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data_ptr<T>();
      const T* pa = ac.data_ptr<T>();
      const bool* pc = condition.data_ptr<bool>();
      for_each_row<3>(shape, {so.data(), sa.data(), sc.data()}, {0, 0, 0},
                      [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& st) {
                        for (int64_t i = 0; i < len; ++i)
                          if (pc[off[2] + i * st[2]]) o[off[0] + i] = pa[off[1] + i * st[1]];
                      });
    });
  }
  record("WhereBackward0", {condition, a, b}, out, {condition}, [](const BackwardArgs& ctx) {
    const Tensor& c = ctx.saved[0];
    Tensor zero = zeros({}, ctx.grad_out.dtype());
    return Grads{Tensor(), ctx.needs_grad[1] ? where(c, ctx.grad_out, zero) : Tensor(),
                 ctx.needs_grad[2] ? where(c, zero, ctx.grad_out) : Tensor()};
  });
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  check_defined(x, "masked_fill", "input");
  check_dtype(mask, kBool, "masked_fill", "mask");
  check_broadcasts_to(mask.sizes(), x.sizes(), "masked_fill", "mask");
  Tensor out = make_empty(x.sizes(), x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = checked_cast<T>(value, "masked_fill");
    map_binary<T, T, bool>(out, x, mask, [v](T xv, bool m) { return m ? v : xv; });
  });
  record("MaskedFillBackward0", {x}, out, {mask}, [](const BackwardArgs& ctx) {
    return Grads{masked_fill(ctx.grad_out, ctx.saved[0], 0.0)};
  });
  return out;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  check_defined(a, "allclose", "input");
  check_defined(b, "allclose", "other");
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "allclose");
  const std::vector<double> va = a.detach().expand(shape).tolist<double>();
  const std::vector<double> vb = b.detach().expand(shape).tolist<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    const double x = va[i], y = vb[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (equal_nan && std::isnan(x) && std::isnan(y)) continue;
      return false;
    }
    if (x == y) continue;  // equal infinities
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

// --- NaN tests, logical and/or, elementwise maximum/minimum ---------------------------------------

namespace {

template <class F>
Tensor test_each(const Tensor& x, const char* op, F f) {
  check_defined(x, op, "input");
  Tensor out = make_empty(x.sizes(), kBool);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_unary<bool, T>(out, x, [&](T v) { return f(v); });
  });
  return out;
}

template <class F>
Tensor logical(const Tensor& a, const Tensor& b, const char* op, F f) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  // a number is true where it is nonzero; f takes bools only, so its loops are compiled for bool alone
  const Tensor ab = a.dtype() == kBool ? a : ne(a.detach(), scalar_like(0, a));
  const Tensor bb = b.dtype() == kBool ? b : ne(b.detach(), scalar_like(0, b));
  return elementwise_compare(ab, bb, kBool, op, f);
}

Tensor extreme_of_two(const Tensor& a, const Tensor& b, bool want_max, const char* op) {
  const ScalarType dt = promote_types(a.dtype(), b.dtype());
  Tensor out = elementwise_binary(a, b, dt, op, [want_max](auto x, auto y) {
    using T = decltype(x);
    if constexpr (is_floating_type_v<T>) {  // bfloat16 too
      if (std::isnan(static_cast<float>(x)) || std::isnan(static_cast<float>(y))) return static_cast<T>(NAN);
    }
    return want_max ? (x > y ? x : y) : (x < y ? x : y);
  });
  // da = g where a wins, g/2 on a tie, 0 where it loses (and g where either is NaN)
  record(want_max ? "MaximumBackward0" : "MinimumBackward0", {a, b}, out, {a, b}, [want_max](const BackwardArgs& ctx) {
    const Tensor& x = ctx.saved[0];
    const Tensor& y = ctx.saved[1];
    Tensor shared = where(eq(x, y), div(ctx.grad_out, 2.0), ctx.grad_out);
    Tensor a_loses = want_max ? lt(x, y) : gt(x, y);
    Tensor b_loses = want_max ? gt(x, y) : lt(x, y);
    return Grads{ctx.needs_grad[0] ? masked_fill(shared.expand(a_loses.sizes()), a_loses, 0.0) : Tensor(),
                 ctx.needs_grad[1] ? masked_fill(shared.expand(b_loses.sizes()), b_loses, 0.0) : Tensor()};
  });
  return out;
}

}  // namespace

Tensor isnan(const Tensor& x) {
  return test_each(x, "isnan", [](auto v) {
    if constexpr (is_floating_type_v<decltype(v)>) return std::isnan(static_cast<double>(v));  // bfloat16 too
    else return false;
  });
}

Tensor isfinite(const Tensor& x) {
  return test_each(x, "isfinite", [](auto v) {
    if constexpr (is_floating_type_v<decltype(v)>) return std::isfinite(static_cast<double>(v));  // bfloat16 too
    else return true;
  });
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return logical(a, b, "logical_and", [](std::same_as<bool> auto x, std::same_as<bool> auto y) { return x && y; });
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  return logical(a, b, "logical_or", [](std::same_as<bool> auto x, std::same_as<bool> auto y) { return x || y; });
}

Tensor maximum(const Tensor& a, const Tensor& b) { return extreme_of_two(a, b, true, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extreme_of_two(a, b, false, "minimum"); }

}  // namespace tg
