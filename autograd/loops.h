// autograd/loops.h — the machinery shared by the op files: dtype dispatch, broadcasting,
// and loops over strided tensors. Internal to autograd/.
//
// Kernels never pay a virtual call or a std::function per element: the element function is a
// template argument (a lambda) and is inlined into the loop. Each loop has a contiguous fast
// path (one flat, vectorisable loop) beside the general strided one.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "autograd/internal.h"
#include "autograd/runtime/parallel.h"
#include "autograd/runtime/work_split.h"

namespace tg {

// Tag carrying a C++ element type: visit_dtype passes one to its function, which reads the
// type back with `using T = typename decltype(tag)::type;`.
template <class T> struct TypeTag { using type = T; };

// "op: bfloat16 tensors are not supported; convert with .to(tg::kFloat32) first": for the ops that
// compute in float32 or float64 only (bfloat16 is storage, and the elementwise ops below).
[[noreturn]] void throw_bfloat16_unsupported(const char* op);

// Call f(TypeTag<T>{}) for the C++ type of a float32 or float64 dtype; throw for the others.
template <class F> decltype(auto) visit_floating(ScalarType dtype, const char* op, F&& f) {
  switch (dtype) {
    case kFloat32: return f(TypeTag<float>{});
    case kFloat64: return f(TypeTag<double>{});
    case kBFloat16: throw_bfloat16_unsupported(op);
    default:
      throw Error(std::string(op) + ": expected a floating point tensor (float32 or float64), got " +
                  dtype_name(dtype));
  }
}

// "int8 tensors hold a quantized weight's values ...": int8 is storage for the quantized ops alone.
[[noreturn]] void throw_int8_unsupported();

// "float16 tensors hold a checkpoint's frozen 16-bit weights ...": float16 is storage for the weight
// products and embedding alone (autograd/dtype.h).
[[noreturn]] void throw_float16_unsupported();

// Call f(TypeTag<T>{}) for any dtype but int8 and float16: float, double, int64_t, bool or BFloat16 (which
// converts to and from float; code that only moves or converts elements takes it as it is).
template <class F> decltype(auto) visit_dtype(ScalarType dtype, F&& f) {
  switch (dtype) {
    case kFloat32: return f(TypeTag<float>{});
    case kFloat64: return f(TypeTag<double>{});
    case kInt64: return f(TypeTag<int64_t>{});
    case kBool: return f(TypeTag<bool>{});
    case kBFloat16: return f(TypeTag<BFloat16>{});
    case kInt8: throw_int8_unsupported();
    case kFloat16: throw_float16_unsupported();
  }
  throw Error("visit_dtype: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

// "inf", "-inf", "nan", "1e+30", "2.5": a number as an error message shows it.
std::string number_str(double v);

// The one door from a double to an element type T: every number that becomes a tensor element
// (fill_, full, masked_fill, from_vector, arange, a scalar operand, a float tensor converted to
// int64) goes through it. A value T cannot hold (nan, inf, or out of T's range) is an error,
// never undefined behaviour: "op: value inf cannot be converted to type int64 without overflow".
// Bool takes any value (nonzero is true); float takes inf and nan but not a finite value past
// its range (as PyTorch's fill_).
template <class T>
bool fits_in(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else if constexpr (std::is_integral_v<T>) {
    // [-2^63, 2^63) for int64: both bounds are exact doubles; nan compares false
    const double low = static_cast<double>(std::numeric_limits<T>::min());
    return v >= low && v < -low;
  } else {
    double max;
    if constexpr (std::is_same_v<T, BFloat16>) max = static_cast<float>(std::numeric_limits<T>::max());
    else max = static_cast<double>(std::numeric_limits<T>::max());
    return !std::isfinite(v) || std::abs(v) <= max;
  }
}

template <class T>
T checked_cast(double v, const char* op) {
  if (!fits_in<T>(v)) {
    throw Error(std::string(op) + ": value " + number_str(v) + " cannot be converted to type " +
                dtype_name(dtype_of<T>()) + " without overflow");
  }
  if constexpr (std::is_same_v<T, bool>) return v != 0.0;  // nan != 0: true, as PyTorch
  else if constexpr (std::is_same_v<T, BFloat16>) return BFloat16(static_cast<float>(v));
  else return static_cast<T>(v);
}

// A Scalar as element type T: an integer Scalar converts exactly (its double copy would round
// past 2^53), a floating one through checked_cast(double).
template <class T>
T checked_cast(const Scalar& s, const char* op) {
  if (!s.integral) return checked_cast<T>(s.value, op);
  if constexpr (std::is_same_v<T, bool>) return s.int_value != 0;
  else if constexpr (std::is_same_v<T, BFloat16>) return BFloat16(static_cast<float>(s.int_value));
  else return static_cast<T>(s.int_value);
}

// Element v of type S, at row-major position `index`, as type T: a floating value an integer
// type cannot hold is an error naming op, the value and the index (PyTorch gives garbage there).
template <class T, class S>
T convert_element(S v, const char* op, int64_t index) {
  if constexpr (std::is_same_v<S, BFloat16> && !std::is_same_v<T, BFloat16>) {
    return convert_element<T>(static_cast<float>(v), op, index);  // bfloat16 -> float is exact
  } else if constexpr (std::is_same_v<T, BFloat16> && !std::is_same_v<S, BFloat16>) {
    return BFloat16(static_cast<float>(v));  // through float, as PyTorch (a double rounds twice)
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!fits_in<T>(v)) {
      throw Error(std::string(op) + ": value " + number_str(v) + " at index " + std::to_string(index) +
                  " cannot be converted to type " + dtype_name(dtype_of<T>()) + " without overflow");
    }
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Signed integer arithmetic that PyTorch defines as wrapping (INT64_MAX + 1 == INT64_MIN) done
// in unsigned arithmetic, where wrapping is defined; floating types compute as written.
template <class T> T wrapping_add(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else return static_cast<T>(a + b);
}
template <class T> T wrapping_sub(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else return static_cast<T>(a - b);
}
template <class T> T wrapping_mul(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else return static_cast<T>(a * b);
}

void check_floating(const Tensor& t, const char* op);
void check_dtype(const Tensor& t, ScalarType dtype, const char* op, const char* what);
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);
void check_defined(const Tensor& t, const char* op, const char* what);

// The shape both broadcast to, by PyTorch's rules (align right; sizes equal or one is 1).
// Throws "op: shapes (3,4) and (5,4) cannot be broadcast (dim 0: 3 vs 5)".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Checks that `from` broadcasts to exactly `to` (an in-place write, a mask over a tensor).
// Throws "op: <what> of shape (3,1) cannot be broadcast to (2,4) (dim 0: 3 vs 2)".
void check_broadcasts_to(const Shape& from, const Shape& to, const char* op, const char* what);
// An attention mask (undefined: none) must be bool and broadcast to the scores (..., T_q, T_k)
// (ops/attention.cpp: the one check, with one message, for every attention op).
void check_attention_mask(const Tensor& mask, const Shape& scores_shape, const char* op);
// Strides that read t as if expanded to `shape` (0 along broadcast dims).
Shape broadcast_strides(const Tensor& t, const Shape& shape);

// A tensor seen as (B,N,I) around dim: B = product of the sizes before dim, N = sizes[dim],
// I = product of the sizes after it (a 0-d tensor is (1,1,1)). Reductions and softmax run on it.
struct DimSplit {
  int64_t B = 1, N = 1, I = 1;
};
DimSplit split_at_dim(const Shape& sizes, int64_t dim);

// An in-place write into t must not reach one memory location through two elements (an expanded
// dim: size > 1, stride 0), or the result would depend on the write order. Throws PyTorch's
// "op: unsupported operation: more than one element of the written-to tensor refers to a single
// memory location. Please clone() the tensor before performing the operation." naming the dim.
void check_no_internal_overlap(const Tensor& t, const char* op);

// Visit every innermost row of an N-operand strided iteration over `sizes`:
//   row(offsets, length, inner_strides)
// offsets[k] is operand k's element offset at the row start; inner_strides[k] its step
// along the row. The last dim is the row; a 0-d shape is one row of length 1.
// for_each_row_in visits rows [first_row, end_row) of them only (rows in row-major order).
template <size_t N, class RowFn>
void for_each_row_in(const Shape& sizes, const std::array<const int64_t*, N>& strides,
                     const std::array<int64_t, N>& base, int64_t first_row, int64_t end_row, RowFn&& row) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  for (int64_t d = 0; d < ndim; ++d)
    if (sizes[d] == 0) return;
  std::array<int64_t, N> inner{};
  const int64_t length = ndim ? sizes[ndim - 1] : 1;
  for (size_t k = 0; k < N; ++k) inner[k] = ndim ? strides[k][ndim - 1] : 0;
  if (ndim <= 1) {
    if (first_row < end_row) row(base, length, inner);
    return;
  }
  // Odometer over the outer dims 0..ndim-2, started at row first_row.
  std::array<int64_t, 16> counter{};
  if (ndim > 17) throw Error("tensor with more than 17 dims is not supported");
  std::array<int64_t, N> offs = base;
  for (int64_t d = ndim - 2, rest = first_row; d >= 0; --d) {
    counter[d] = rest % sizes[d];
    rest /= sizes[d];
    for (size_t k = 0; k < N; ++k) offs[k] += counter[d] * strides[k][d];
  }
  for (int64_t r = first_row; r < end_row; ++r) {
    row(offs, length, inner);
    for (int64_t d = ndim - 2; d >= 0; --d) {
      if (++counter[d] < sizes[d]) {
        for (size_t k = 0; k < N; ++k) offs[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) offs[k] -= strides[k][d] * (sizes[d] - 1);
      counter[d] = 0;
    }
  }
}

// The number of rows for_each_row visits: the product of all sizes but the last.
inline int64_t row_count(const Shape& sizes) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < sizes.size(); ++d) rows *= sizes[d];
  return rows;
}

template <size_t N, class RowFn>
void for_each_row(const Shape& sizes, const std::array<const int64_t*, N>& strides,
                  const std::array<int64_t, N>& base, RowFn&& row) {
  for_each_row_in(sizes, strides, base, 0, row_count(sizes), row);
}

// body(begin, end) over [0, n): split over the threads when n is large enough that a chunk (at
// least kElementwiseGrain elements: work_split's bytes a thread, an element of float32 read once
// and written once) outweighs handing it out. For elementwise loops only: each element is
// computed alone, so the split never changes a result.
constexpr int64_t kElementwiseGrain = work_split::grain_for(2 * int64_t{sizeof(float)});
template <class Body>
void for_elements(int64_t n, Body&& body) {
  if (n < 2 * kElementwiseGrain) {
    body(int64_t{0}, n);
    return;
  }
  parallel_for(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) { body(begin, end); });
}

// for_each_row with the rows split over the threads as for_elements splits elements (each row
// wholly on one thread). For elementwise loops only, whose rows may run in any order.
template <size_t N, class RowFn>
void for_rows_in_parallel(const Shape& sizes, const std::array<const int64_t*, N>& strides,
                          const std::array<int64_t, N>& base, RowFn&& row) {
  const int64_t rows = row_count(sizes), length = sizes.empty() ? 1 : sizes.back();
  if (rows < 2 || rows * length < 2 * kElementwiseGrain) {
    for_each_row_in(sizes, strides, base, 0, rows, row);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(length, 1));
  parallel_for(0, rows, grain, [&](int64_t first, int64_t end) { for_each_row_in(sizes, strides, base, first, end, row); });
}

// out[i] = f(in[i]) elementwise; out is contiguous with in's shape.
template <class Out, class In, class F>
void map_unary(const Tensor& out, const Tensor& in, F&& f) {
  Out* o = out.data_ptr<Out>();
  const In* x = in.data_ptr<In>();
  if (in.is_contiguous()) {
    for_elements(in.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = f(x[i]);
    });
    return;
  }
  const Shape out_strides = contiguous_strides(in.sizes());
  for_rows_in_parallel<2>(in.sizes(), {out_strides.data(), in.strides().data()}, {0, 0},
                  [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                    Out* orow = o + off[0];
                    const In* xrow = x + off[1];
                    for (int64_t i = 0; i < len; ++i) orow[i] = f(xrow[i * st[1]]);
                  });
}

// out[i] = f(a[i], b[i]) with a and b broadcast to out's shape; out is contiguous.
template <class Out, class A, class B, class F>
void map_binary(const Tensor& out, const Tensor& a, const Tensor& b, F&& f) {
  Out* o = out.data_ptr<Out>();
  const A* pa = a.data_ptr<A>();
  const B* pb = b.data_ptr<B>();
  if (a.sizes() == out.sizes() && b.sizes() == out.sizes() && a.is_contiguous() && b.is_contiguous()) {
    for_elements(out.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = f(pa[i], pb[i]);
    });
    return;
  }
  const Shape so = contiguous_strides(out.sizes());
  const Shape sa = broadcast_strides(a, out.sizes());
  const Shape sb = broadcast_strides(b, out.sizes());
  for_rows_in_parallel<3>(out.sizes(), {so.data(), sa.data(), sb.data()}, {0, 0, 0},
                  [&](const std::array<int64_t, 3>& off, int64_t len, const std::array<int64_t, 3>& st) {
                    Out* orow = o + off[0];
                    const A* arow = pa + off[1];
                    const B* brow = pb + off[2];
                    if (st[1] == 1 && st[2] == 1) {
                      for (int64_t i = 0; i < len; ++i) orow[i] = f(arow[i], brow[i]);
                    } else if (st[1] == 1 && st[2] == 0) {
                      const B bv = brow[0];
                      for (int64_t i = 0; i < len; ++i) orow[i] = f(arow[i], bv);
                    } else {
                      for (int64_t i = 0; i < len; ++i) orow[i] = f(arow[i * st[1]], brow[i * st[2]]);
                    }
                  });
}

// The dtype a Scalar takes next to tensor t (PyTorch: a Python number does not widen a tensor
// of its own kind; a float number next to an integer tensor gives the default float32).
ScalarType scalar_dtype(const Scalar& s, const Tensor& t);
// s as a 0-d tensor of scalar_dtype(s, t); an integer value past int64 is an error naming op.
Tensor scalar_like(const Scalar& s, const Tensor& t, const char* op = "scalar");

// out = f(a, b) elementwise with broadcasting, computed in dtype `compute` (inputs converted
// to it), stored as `compute` (elementwise_binary) or as bool (elementwise_compare, below). f is a
// generic lambda (auto x, auto y). Given `into` (contiguous, of out's shape and dtype), the result
// is written there instead of a new tensor; `into` may be a itself, as element i of a is read
// before element i of out is written. The bool result is a template argument, not a run-time
// flag, so that each op's loops are compiled for the one result type it has.
// A formula for some element types only says so in its parameters, e.g.
//   [](std::floating_point auto x, std::floating_point auto y) { return x / y; }
// and the loops are compiled for those types alone (bfloat16 computes in float); another compute
// dtype is an error naming the op.
template <bool kOutIsBool, class F>
Tensor elementwise_binary_as(const Tensor& a, const Tensor& b, ScalarType compute, const char* op, F f, Tensor into) {
  check_defined(a, op, "input");
  check_defined(b, op, "other");
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  Tensor out = into.defined() ? into : make_empty(shape, kOutIsBool ? kBool : compute);
  const Tensor ac = a.dtype() == compute ? a : a.detach().to(compute);
  const Tensor bc = b.dtype() == compute ? b : b.detach().to(compute);
  visit_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Math = std::conditional_t<std::is_same_v<T, BFloat16>, float, T>;  // the type f computes in
    if constexpr (!std::is_invocable_v<F&, Math, Math>) {
      throw Error(std::string(op) + ": not supported for " + dtype_name(compute) + " tensors");
    } else if constexpr (std::is_same_v<T, BFloat16>) {  // computed in float32, stored as bfloat16 (as PyTorch's CPU kernels)
      const auto in_float = [&f](T x, T y) { return f(static_cast<Math>(x), static_cast<Math>(y)); };
      if constexpr (kOutIsBool) map_binary<bool, T, T>(out, ac, bc, in_float);
      else map_binary<T, T, T>(out, ac, bc, [&](T x, T y) { return T(static_cast<Math>(in_float(x, y))); });
    } else {
      map_binary<std::conditional_t<kOutIsBool, bool, T>, T, T>(out, ac, bc, f);
    }
  });
  return out;
}

template <class F>
Tensor elementwise_binary(const Tensor& a, const Tensor& b, ScalarType compute, const char* op, F f,
                          Tensor into = Tensor()) {
  return elementwise_binary_as<false>(a, b, compute, op, f, into);
}

// out = f(a, b) as bool, compared in dtype `compute` (eq, lt, logical_and, ...).
template <class F>
Tensor elementwise_compare(const Tensor& a, const Tensor& b, ScalarType compute, const char* op, F f) {
  return elementwise_binary_as<true>(a, b, compute, op, f, Tensor());
}

// out = f(x) elementwise in x's floating dtype. f is a generic lambda (auto v). An integer or
// bool x is first converted to float32, as PyTorch promotes it for exp, log, sin, ...
template <class F>
Tensor elementwise_unary(const Tensor& x_in, const char* op, F f) {
  check_defined(x_in, op, "input");
  const Tensor x = is_floating(x_in.dtype()) ? x_in : x_in.to(kFloat32);
  Tensor out = make_empty(x.sizes(), x.dtype());
  if (x.dtype() == kBFloat16) {  // computed in float32, stored as bfloat16
    map_unary<BFloat16, BFloat16>(out, x, [&](BFloat16 v) {
      return BFloat16(static_cast<float>(f(static_cast<float>(v))));
    });
    return out;
  }
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_unary<T, T>(out, x, [&](T v) { return static_cast<T>(f(v)); });
  });
  return out;
}

// out = f(x) elementwise for an int64 x, kept int64 (abs, relu, clamp, pow of integers, as
// PyTorch's). f is a generic lambda (int64_t v).
template <class F>
Tensor integer_unary(const Tensor& x, F f) {
  Tensor out = make_empty(x.sizes(), kInt64);
  map_unary<int64_t, int64_t>(out, x, [&](int64_t v) { return static_cast<int64_t>(f(v)); });
  return out;
}

// Write v into every element of t, whatever its strides (never reads the old values, which may
// be uninitialised).
template <class T>
void fill_strided(const Tensor& t, T v) {
  T* p = t.data_ptr<T>();
  if (t.is_contiguous()) {
    std::fill(p, p + t.numel(), v);
    return;
  }
  for_each_row<1>(t.sizes(), {t.strides().data()}, {0},
                  [&](const std::array<int64_t, 1>& off, int64_t len, const std::array<int64_t, 1>& st) {
                    for (int64_t i = 0; i < len; ++i) p[off[0] + i * st[0]] = v;
                  });
}

// t's data, contiguous and cut from the tape (a copy only when needed); an undefined t stays
// undefined. For fused ops whose loops take plain buffers (layer_norm, rms_norm).
inline Tensor contiguous_data(const Tensor& t) {
  if (!t.defined()) return t;
  return t.is_contiguous() ? t : t.detach().contiguous();
}

// t's elements, or null for an undefined t (an optional weight or bias).
template <class T> const T* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr<T>() : nullptr; }

// The element offsets of t in memory order (increasing address), as PyTorch's TensorIterator
// visits a non-contiguous tensor: the random ops fill in this order.
std::vector<int64_t> memory_order_offsets(const Tensor& t);

}  // namespace tg
