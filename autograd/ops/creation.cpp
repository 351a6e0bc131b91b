// autograd/ops/creation.cpp — tensors from values and shapes; tril/triu, stack, cat.
//
//   tril   dx = tril(g)                        triu   dx = triu(g)
//   stack  dx_i = g.select(dim, i)             cat    dx_i = g.narrow(dim, offset_i, size_i)
#include <cmath>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace detail {
void check_ragged(const char* what, size_t got, size_t expected) {
  if (got != expected) {
    throw Error(std::string("tensor: expected sequence of length ") + std::to_string(expected) + " at " + what +
                " but got " + std::to_string(got) + " (nested lists must be rectangular)");
  }
}
Tensor tensor_from_numbers(const std::vector<Number>& flat, const Shape& shape, std::optional<ScalarType> dtype) {
  Number::Kind widest = Number::Bool;
  for (const Number& n : flat) widest = std::max(widest, n.kind);
  const ScalarType inferred = widest == Number::Floating ? kFloat32 : widest == Number::Integer ? kInt64 : kBool;
  const ScalarType target = dtype.value_or(inferred);
  if (widest == Number::Floating || is_floating(target)) {
    std::vector<double> values;
    for (const Number& n : flat) values.push_back(n.real);
    return from_vector(values, shape, target);
  }
  std::vector<int64_t> values;  // integers stay exact past 2^53
  for (const Number& n : flat) values.push_back(n.integer);
  return from_vector(values, shape, target);
}
}  // namespace detail

Tensor empty(const Shape& shape, ScalarType dtype) { return make_empty(shape, dtype); }

// A new tensor with every element = value (checked against the dtype before allocating).
static Tensor filled(const Shape& shape, Scalar value, ScalarType dtype, const char* op) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = checked_cast<T>(value, op);
    Tensor t = make_empty(shape, dtype, op);
    fill_strided<T>(t, v);
    return t;
  });
}

Tensor full(const Shape& shape, Scalar value, ScalarType dtype) { return filled(shape, value, dtype, "full"); }
Tensor zeros(const Shape& shape, ScalarType dtype) { return filled(shape, 0.0, dtype, "zeros"); }
Tensor ones(const Shape& shape, ScalarType dtype) { return filled(shape, 1.0, dtype, "ones"); }
Tensor empty_like(const Tensor& t) { return make_empty(t.sizes(), t.dtype()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), t.dtype()); }
Tensor full_like(const Tensor& t, Scalar value) { return full(t.sizes(), value, t.dtype()); }
Tensor scalar_tensor(Scalar value, ScalarType dtype) { return full({}, value, dtype); }

template <class V>
static Tensor from_values(const std::vector<V>& values, const Shape& shape, ScalarType dtype) {
  const int64_t numel = checked_numel(shape, "from_vector");
  if (static_cast<int64_t>(values.size()) != numel) {
    throw Error("from_vector: " + std::to_string(values.size()) + " values do not fill shape " + shape_str(shape) +
                " (" + std::to_string(numel) + " elements)");
  }
  Tensor t = make_empty(shape, dtype, "from_vector");
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = convert_element<T>(values[i], "from_vector", static_cast<int64_t>(i));
  });
  return t;
}

Tensor from_vector(const std::vector<double>& values, const Shape& shape, ScalarType dtype) {
  return from_values(values, shape, dtype);
}
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, ScalarType dtype) {
  return from_values(values, shape, dtype);
}

Tensor arange(Scalar end) { return arange(0, end, 1); }

Tensor arange(Scalar start, Scalar end, Scalar step) {
  const bool integral = start.integral && end.integral && step.integral;
  return arange(start, end, step, integral ? kInt64 : kFloat32);
}

Tensor arange(Scalar start, Scalar end, Scalar step, ScalarType dtype) {
  const std::string range = number_str(start.value) + " -> " + number_str(end.value) + " with step " +
                            number_str(step.value);
  if (!std::isfinite(start.value) || !std::isfinite(end.value) || !std::isfinite(step.value)) {
    throw Error("arange: unsupported range: " + range + " (start, end and step must be finite)");
  }
  if (step.value == 0) throw Error("arange: step must be nonzero");
  if ((step.value > 0 && end.value < start.value) || (step.value < 0 && end.value > start.value)) {
    throw Error("arange: upper bound and larger bound inconsistent with step sign");
  }
  const double count = std::ceil((end.value - start.value) / step.value);
  if (!fits_in<int64_t>(count)) {
    throw Error("arange: unsupported range: " + range + " has " + number_str(count) +
                " elements, more than int64 can count");
  }
  const int64_t n = static_cast<int64_t>(count);
  Tensor t = make_empty({n}, dtype, "arange");
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = checked_cast<T>(start.value + static_cast<double>(i) * step.value, "arange");
  });
  return t;
}

Tensor eye(int64_t n, ScalarType dtype) {
  if (n < 0) throw Error("eye: n must be greater or equal to 0, got " + std::to_string(n));
  Tensor t = filled({n, n}, 0.0, dtype, "eye");
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) p[i * n + i] = static_cast<T>(1);
  });
  return t;
}

// Keep element (i, j) of every matrix in the last two dims when keep(j - i); zero it otherwise.
template <class Keep>
static Tensor triangle(const Tensor& x, Keep keep, const char* op) {
  if (x.dim() < 2) {
    throw Error(std::string(op) + ": input tensor must have at least 2 dimensions, got shape " + shape_str(x.sizes()));
  }
  Tensor out = x.detach().clone();
  const int64_t rows = x.size(-2), cols = x.size(-1);
  const int64_t batches = (rows * cols) != 0 ? out.numel() / (rows * cols) : 0;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data_ptr<T>();
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          if (!keep(j - i)) p[(b * rows + i) * cols + j] = T(0);
  });
  return out;
}

Tensor tril(const Tensor& x, int64_t diagonal) {
  check_defined(x, "tril", "input");
  Tensor out = triangle(x, [diagonal](int64_t j_minus_i) { return j_minus_i <= diagonal; }, "tril");
  // d/dx tril(x) = tril(g)
  record("TrilBackward0", {x}, out, {}, [diagonal](const BackwardArgs& ctx) { return Grads{tril(ctx.grad_out, diagonal)}; });
  return out;
}

Tensor triu(const Tensor& x, int64_t diagonal) {
  check_defined(x, "triu", "input");
  Tensor out = triangle(x, [diagonal](int64_t j_minus_i) { return j_minus_i >= diagonal; }, "triu");
  // d/dx triu(x) = triu(g)
  record("TriuBackward0", {x}, out, {}, [diagonal](const BackwardArgs& ctx) { return Grads{triu(ctx.grad_out, diagonal)}; });
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("cat: expected a non-empty list of Tensors");
  const Tensor& first = tensors[0];
  for (const Tensor& t : tensors) check_defined(t, "cat", "a tensor in the list");
  if (first.dim() == 0) throw Error("cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  dim = wrap_dim(dim, first.dim(), "cat");
  ScalarType dtype = first.dtype();
  Shape shape = first.sizes();
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    dtype = promote_types(dtype, t.dtype());
    if (t.dim() != first.dim()) {
      throw Error("cat: Tensors must have same number of dimensions: got " + std::to_string(first.dim()) +
                  " and " + std::to_string(t.dim()) + " (tensor " + std::to_string(i) + ")");
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d != dim && t.sizes()[d] != first.sizes()[d]) {
        throw Error("cat: Sizes of tensors must match except in dimension " + std::to_string(dim) + ". Expected size " +
                    std::to_string(first.sizes()[d]) + " but got size " + std::to_string(t.sizes()[d]) +
                    " for tensor number " + std::to_string(i) + " in the list.");
      }
    }
    if (__builtin_add_overflow(shape[dim], t.sizes()[dim], &shape[dim])) {
      throw Error("cat: the concatenated size along dim " + std::to_string(dim) + " overflows int64 (tensor " +
                  std::to_string(i) + " of shape " + shape_str(t.sizes()) + ")");
    }
  }
  Tensor out = make_empty(shape, dtype);
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    offsets.push_back(offset);
    copy_values(out.narrow(dim, offset, t.sizes()[dim]), t, "cat");
    offset += t.sizes()[dim];
  }
  std::vector<int64_t> lengths;
  for (const Tensor& t : tensors) lengths.push_back(t.sizes()[dim]);
  // d/dx_i cat(x) = g.narrow(dim, offset_i, size_i)
  record("CatBackward0", tensors, out, {}, [dim, offsets, lengths](const BackwardArgs& ctx) {
    Grads g;
    for (size_t i = 0; i < offsets.size(); ++i)
      g.push_back(ctx.needs_grad[i] ? ctx.grad_out.narrow(dim, offsets[i], lengths[i]) : Tensor());
    return g;
  });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw Error("stack: expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined(tensors[i], "stack", "a tensor in the list");
    if (tensors[i].sizes() != tensors[0].sizes()) {
      throw Error("stack: stack expects each tensor to be equal size, but got " + shape_str(tensors[0].sizes()) +
                  " at entry 0 and " + shape_str(tensors[i].sizes()) + " at entry " + std::to_string(i));
    }
  }
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  Tensor out;
  {
    NoGradGuard no_grad;
    std::vector<Tensor> expanded;
    for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(dim));
    out = cat(expanded, dim);
  }
  // d/dx_i stack(x) = g.select(dim, i)
  record("StackBackward0", tensors, out, {}, [dim](const BackwardArgs& ctx) {
    Grads g;
    for (size_t i = 0; i < ctx.needs_grad.size(); ++i)
      g.push_back(ctx.needs_grad[i] ? ctx.grad_out.select(dim, static_cast<int64_t>(i)) : Tensor());
    return g;
  });
  return out;
}

}  // namespace tg
