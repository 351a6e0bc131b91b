// autograd/loops.cpp — broadcasting and the checks every op shares.
#include "autograd/loops.h"

#include <algorithm>
#include <charconv>
#include <numeric>

namespace tg {

std::string number_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char text[32];
  const auto end = std::to_chars(text, text + sizeof(text), v).ptr;  // shortest round-trip form
  return std::string(text, end);
}

void check_defined(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) throw Error(std::string(op) + ": " + what + " is an undefined tensor");
}

void throw_bfloat16_unsupported(const char* op) {
  throw Error(std::string(op) + ": bfloat16 tensors are not supported here (bfloat16 is for storage, conversion and "
              "elementwise arithmetic); convert with .to(tg::kFloat32) first");
}

void throw_int8_unsupported() {
  throw Error("int8 tensors hold a quantized weight's values and are read only by the quantized ops with their "
              "scales (autograd/ops/quantize.cpp); tg::dequantize_int8 gives the float32 weight");
}

void throw_float16_unsupported() {
  throw Error("float16 tensors hold a checkpoint's frozen 16-bit weights and are read only by the weight products "
              "(matmul and linear, a float32 operand times a float16 weight) and embedding; convert one with "
              ".to(tg::kFloat32) (exact)");
}

void check_floating(const Tensor& t, const char* op) {
  check_defined(t, op, "input");
  if (!is_floating(t.dtype())) {
    throw Error(std::string(op) + ": expected a floating point tensor (float32 or float64), got " +
                dtype_name(t.dtype()));
  }
}

void check_dtype(const Tensor& t, ScalarType dtype, const char* op, const char* what) {
  check_defined(t, op, what);
  if (t.dtype() != dtype) {
    throw Error(std::string(op) + ": expected " + what + " to have dtype " + dtype_name(dtype) + ", got " +
                dtype_name(t.dtype()));
  }
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype()) {
    throw Error(std::string(op) + ": expected both tensors to have the same dtype, got " + dtype_name(a.dtype()) +
                " and " + dtype_name(b.dtype()));
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // align from the right
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw Error(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                  " cannot be broadcast (dim " + std::to_string(i) + ": " + std::to_string(da) + " vs " +
                  std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_broadcasts_to(const Shape& from, const Shape& to, const char* op, const char* what) {
  const bool fits = from.size() <= to.size();
  const size_t lead = fits ? to.size() - from.size() : 0;
  for (size_t i = 0; fits && i < from.size(); ++i) {
    if (from[i] == to[lead + i] || from[i] == 1) continue;
    throw Error(std::string(op) + ": " + what + " of shape " + shape_str(from) + " cannot be broadcast to " +
                shape_str(to) + " (dim " + std::to_string(lead + i) + ": " + std::to_string(from[i]) + " vs " +
                std::to_string(to[lead + i]) + ")");
  }
  if (!fits) {
    throw Error(std::string(op) + ": " + what + " of shape " + shape_str(from) + " cannot be broadcast to " +
                shape_str(to) + " (" + std::to_string(from.size()) + " dims, more than " +
                std::to_string(to.size()) + ")");
  }
}

void check_no_internal_overlap(const Tensor& t, const char* op) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) == 0) {
      throw Error(std::string(op) + ": unsupported operation: more than one element of the written-to tensor refers "
                  "to a single memory location. Please clone() the tensor before performing the operation. (dim " +
                  std::to_string(d) + " of shape " + shape_str(t.sizes()) + " is expanded: stride 0)");
    }
  }
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  const size_t n = shape.size();
  const size_t k = t.sizes().size();
  Shape strides(n, 0);
  for (size_t i = 0; i < k; ++i) {
    const size_t d = n - k + i;
    strides[d] = t.sizes()[i] == 1 && shape[d] != 1 ? 0 : t.strides()[i];
  }
  return strides;
}

DimSplit split_at_dim(const Shape& sizes, int64_t dim) {
  DimSplit s;
  bool overflows = false;  // only possible beside a size-0 dim, e.g. (0, 2^40, 2^40)
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d < dim) overflows = __builtin_mul_overflow(s.B, sizes[d], &s.B) || overflows;
    if (d == dim) s.N = sizes[d];
    if (d > dim) overflows = __builtin_mul_overflow(s.I, sizes[d], &s.I) || overflows;
  }
  if (overflows) {
    throw Error("split_at_dim: the sizes before or after dim " + std::to_string(dim) + " of shape " + shape_str(sizes) +
                " hold more elements than int64 can count");
  }
  return s;
}

ScalarType scalar_dtype(const Scalar& s, const Tensor& t) {
  if (is_floating(t.dtype())) return t.dtype();
  if (s.integral) return t.dtype() == kBool ? kInt64 : t.dtype();
  return kFloat32;
}

Tensor scalar_like(const Scalar& s, const Tensor& t, const char* op) {
  Tensor out = make_empty({}, scalar_dtype(s, t));
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      // an operand past float's range rounds to +-inf, as PyTorch's x * 1e300
      const double limit = static_cast<double>(std::numeric_limits<T>::max());
      const double v = std::isfinite(s.value) && std::abs(s.value) > limit ? std::copysign(INFINITY, s.value) : s.value;
      *out.data_ptr<T>() = static_cast<T>(v);
    } else {
      *out.data_ptr<T>() = checked_cast<T>(s, op);
    }
  });
  return out;
}

std::vector<int64_t> memory_order_offsets(const Tensor& t) {
  // Visit dims from the largest stride (outermost) to the smallest (innermost), as
  // TensorIterator orders a non-contiguous tensor: values land in increasing address order.
  const int64_t nd = t.dim();
  std::vector<int64_t> order(nd);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return t.strides()[x] > t.strides()[y]; });
  Shape sizes(nd), strides(nd);
  for (int64_t i = 0; i < nd; ++i) {
    sizes[i] = t.sizes()[order[i]];
    strides[i] = t.strides()[order[i]];
  }
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(t.numel()));
  for_each_row<1>(sizes, {strides.data()}, {0},
                  [&](const std::array<int64_t, 1>& off, int64_t len, const std::array<int64_t, 1>& st) {
                    for (int64_t i = 0; i < len; ++i) offsets.push_back(off[0] + i * st[0]);
                  });
  return offsets;
}

}  // namespace tg
