// autograd/ops/reduce.cpp — sum, mean, var, max/min, argmax over one dim or all elements.
//
//   sum    dx = g broadcast back over the reduced dim
//   mean   dx = g / N
//   var    dx = g * 2 (x - mean) / (N - unbiased)
//   max    dx = g at the index of the maximum (over all: split evenly among ties, or among the
//          NaNs when the result is NaN), 0 elsewhere. An empty input reduces to an empty result
//          unless the reduced dim itself has size 0.
//
// A reduction over dim d sees the input as (B,N,I) (split_at_dim): B = prod(sizes before d),
// N = sizes[d], I = prod(sizes after d). Float32 sums accumulate in double.
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/kernels/row_kernels.h"
#include "autograd/fast_kernels.h"
#include "autograd/record.h"

namespace tg {

namespace {

struct ReduceGeometry : DimSplit {  // x as (B,N,I), reduced over N
  Shape out_shape;                   // with keepdim
};

ReduceGeometry geometry(const Tensor& x, int64_t dim, bool keepdim) {
  ReduceGeometry g{split_at_dim(x.sizes(), dim), {}};
  g.out_shape = x.sizes();
  if (x.dim()) {
    if (keepdim) g.out_shape[dim] = 1;
    else g.out_shape.erase(g.out_shape.begin() + dim);
  }
  return g;
}

// Accumulator type: double for floats (more exact sums); uint64 for integers and bools, so an
// int64 sum that overflows wraps as PyTorch's does, without undefined behaviour.
template <class T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

// out (outer, inner) = sum over N of x (outer, N, inner); x contiguous.
template <class T, class R>
void sum_kernel(R* out, const T* x, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      Acc<T> acc = 0;
      const T* row = x + o * n;
      for (int64_t i = 0; i < n; ++i) acc += static_cast<Acc<T>>(row[i]);
      out[o] = static_cast<R>(acc);
    }
    return;
  }
  std::vector<Acc<T>> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), Acc<T>(0));
    for (int64_t i = 0; i < n; ++i) {
      const T* row = x + (o * n + i) * inner;
      for (int64_t j = 0; j < inner; ++j) acc[j] += static_cast<Acc<T>>(row[j]);
    }
    for (int64_t j = 0; j < inner; ++j) out[o * inner + j] = static_cast<R>(acc[j]);
  }
}

// PyTorch's sum dtype: integers and bools sum to int64; floats keep their dtype.
ScalarType sum_dtype(ScalarType t) { return is_floating(t) ? t : kInt64; }

Tensor sum_forward(const Tensor& x, int64_t dim, bool keepdim) {
  if (x.dtype() == kBFloat16) {  // summed in float32, rounded once (as PyTorch accumulates bfloat16)
    NoGradGuard no_grad;
    return sum_forward(x.to(kFloat32), dim, keepdim).to(kBFloat16);
  }
  const ReduceGeometry g = geometry(x, dim, keepdim);
  const Tensor xc = x.contiguous();
  Tensor out = make_empty(g.out_shape, sum_dtype(x.dtype()));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      sum_kernel<T, T>(out.data_ptr<T>(), xc.data_ptr<T>(), g.B, g.N, g.I);
    } else {
      sum_kernel<T, int64_t>(out.data_ptr<int64_t>(), xc.data_ptr<T>(), g.B, g.N, g.I);
    }
  });
  return out;
}

// g (shape with dim reduced, keepdim or not) broadcast back to `shape`.
Tensor expand_back(const Tensor& g, const Shape& shape, int64_t dim, bool keepdim) {
  if (shape.empty()) return g.reshape({});
  Tensor gk = keepdim ? g : g.unsqueeze(dim);
  return gk.expand(shape);
}

}  // namespace

Tensor sum(const Tensor& x) {
  check_defined(x, "sum", "input");
  Tensor out = sum_forward(x.reshape({x.numel()}), 0, false);
  const Shape shape = x.sizes();
  // d/dx sum(x) = g everywhere
  record("SumBackward0", {x}, out, {}, [shape](const BackwardArgs& ctx) { return Grads{ctx.grad_out.expand(shape)}; });
  return out;
}

Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  check_defined(x, "sum", "input");
  dim = wrap_dim(dim, x.dim(), "sum");
  Tensor out = sum_forward(x, dim, keepdim);
  const Shape shape = x.sizes();
  record("SumBackward1", {x}, out, {}, [shape, dim, keepdim](const BackwardArgs& ctx) {
    return Grads{expand_back(ctx.grad_out, shape, dim, keepdim)};
  });
  return out;
}

Tensor mean(const Tensor& x) {
  check_floating(x, "mean");
  const double n = static_cast<double>(x.numel());
  Tensor out;
  {
    NoGradGuard no_grad;
    out = div(sum(x), n);
  }
  const Shape shape = x.sizes();
  // d/dx mean(x) = g / N
  record("MeanBackward0", {x}, out, {}, [shape, n](const BackwardArgs& ctx) {
    return Grads{div(ctx.grad_out, n).expand(shape)};
  });
  return out;
}

Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  check_floating(x, "mean");
  dim = wrap_dim(dim, x.dim(), "mean");
  const double n = static_cast<double>(x.dim() ? x.sizes()[dim] : 1);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = div(sum(x, dim, keepdim), n);
  }
  const Shape shape = x.sizes();
  record("MeanBackward1", {x}, out, {}, [shape, dim, keepdim, n](const BackwardArgs& ctx) {
    return Grads{expand_back(div(ctx.grad_out, n), shape, dim, keepdim)};
  });
  return out;
}

Tensor var(const Tensor& x, int64_t dim, bool unbiased, bool keepdim) {
  check_floating(x, "var");
  dim = wrap_dim(dim, x.dim(), "var");
  const int64_t n = x.dim() ? x.sizes()[dim] : 1;
  const double denom = static_cast<double>(n) - (unbiased ? 1.0 : 0.0);
  Tensor out;
  {
    NoGradGuard no_grad;
    Tensor centered = sub(x, mean(x, dim, true));
    out = div(sum(mul(centered, centered), dim, keepdim), denom);
  }
  const Shape shape = x.sizes();
  // d/dx var(x) = g * 2 (x - mean) / (N - unbiased)
  record("VarBackward0", {x}, out, {x}, [shape, dim, keepdim, denom](const BackwardArgs& ctx) {
    const Tensor& xs = ctx.saved[0];
    Tensor centered = sub(xs, mean(xs, dim, true));
    return Grads{mul(expand_back(ctx.grad_out, shape, dim, keepdim), mul(centered, 2.0 / denom))};
  });
  return out;
}

Tensor var(const Tensor& x) {
  check_floating(x, "var");
  return var(x.reshape({x.numel()}), 0, true, false).reshape({});
}

// --- max / min / argmax --------------------------------------------------------------------------

namespace {

// Index along N of the largest (or smallest) value for each (outer, inner); NaN wins, first wins ties.
template <class T>
void arg_extreme_kernel(int64_t* idx, T* values, const T* x, int64_t outer, int64_t n, int64_t inner, bool want_max) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* p = x + o * n * inner + j;
      int64_t best = 0;
      T bv = p[0];
      for (int64_t i = 1; i < n; ++i) {
        const T v = p[i * inner];
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(bv)) break;
          if (std::isnan(v)) { best = i; bv = v; break; }
        }
        if (want_max ? v > bv : v < bv) { best = i; bv = v; }
      }
      idx[o * inner + j] = best;
      if (values) values[o * inner + j] = bv;
    }
  }
}

ValuesIndices extreme_dim(const Tensor& x, int64_t dim, bool keepdim, bool want_max, const char* op) {
  check_defined(x, op, "input");
  dim = wrap_dim(dim, x.dim(), op);
  if (x.dim() > 0 && x.sizes()[dim] == 0) {  // another dim of size 0 is fine: the result is empty
    throw Error(std::string(op) + "(): Expected reduction dim " + std::to_string(dim) +
                " to have non-zero size (input shape " + shape_str(x.sizes()) + ").");
  }
  const ReduceGeometry g = geometry(x, dim, keepdim);
  const Tensor xc = x.contiguous();
  ValuesIndices r{make_empty(g.out_shape, x.dtype()), make_empty(g.out_shape, kInt64)};
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    arg_extreme_kernel<T>(r.indices.data_ptr<int64_t>(), r.values.data_ptr<T>(), xc.data_ptr<T>(), g.B, g.N,
                          g.I, want_max);
  });
  const Shape shape = x.sizes();
  // d/dx max(x, dim) = g scattered to the index of the maximum
  record(want_max ? "MaxBackward0" : "MinBackward0", {x}, r.values, {r.indices},
         [shape, dim, keepdim](const BackwardArgs& ctx) {
           Tensor idx = keepdim ? ctx.saved[0] : ctx.saved[0].unsqueeze(dim);
           Tensor gk = keepdim ? ctx.grad_out : ctx.grad_out.unsqueeze(dim);
           Tensor dx = zeros(shape, ctx.grad_out.dtype());
           // dx.scatter_(dim, idx, g): equal to g where the index along dim matches
           Tensor positions = arange(0, shape.empty() ? 1 : shape[dim]);
           Shape view_shape(shape.size(), 1);
           if (!shape.empty()) view_shape[dim] = shape[dim];
           Tensor hit = eq(positions.reshape(view_shape), idx);
           return Grads{where(hit, gk, dx)};
         });
  return r;
}

Tensor extreme_all(const Tensor& x, bool want_max, const char* op) {
  check_defined(x, op, "input");
  if (x.numel() == 0) {
    throw Error(std::string(op) + "(): Expected reduction dim to be specified for input.numel() == 0 (input shape " +
                shape_str(x.sizes()) + "). Specify the reduction dim with the 'dim' argument.");
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    out = extreme_dim(x.reshape({x.numel()}), 0, false, want_max, op).values;
  }
  // d/dx max(x) = g split evenly among the elements equal to the maximum (among the NaNs when
  // the maximum is NaN: NaN != NaN, so they are found as the elements unequal to themselves)
  record(want_max ? "MaxBackward1" : "MinBackward1", {x}, out, {x, out}, [](const BackwardArgs& ctx) {
    const Tensor& xs = ctx.saved[0];
    Tensor hit = std::isnan(ctx.saved[1].item()) ? ne(xs, xs) : eq(xs, ctx.saved[1]);
    Tensor count = sum(hit);
    Tensor share = div(ctx.grad_out, count.to(ctx.grad_out.dtype()));
    return Grads{where(hit, share, zeros({}, ctx.grad_out.dtype()))};
  });
  return out;
}

}  // namespace

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) { return extreme_dim(x, dim, keepdim, true, "max"); }
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) { return extreme_dim(x, dim, keepdim, false, "min"); }
Tensor max(const Tensor& x) { return extreme_all(x, true, "max"); }
Tensor min(const Tensor& x) { return extreme_all(x, false, "min"); }

// The index of the largest (smallest) element of the flattened x.
static Tensor arg_extreme_all(const Tensor& x, bool want_max, const char* op) {
  NoGradGuard no_grad;
  check_defined(x, op, "input");
  if (x.numel() == 0) {
    throw Error(std::string(op) + "(): Expected reduction dim to be specified for input.numel() == 0 (input shape " +
                shape_str(x.sizes()) + ").");
  }
  return extreme_dim(x.reshape({x.numel()}), 0, false, want_max, op).indices;
}

Tensor argmax(const Tensor& x) { return arg_extreme_all(x, true, "argmax"); }
Tensor argmin(const Tensor& x) { return arg_extreme_all(x, false, "argmin"); }

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return extreme_dim(x, dim, keepdim, true, "argmax").indices;
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return extreme_dim(x, dim, keepdim, false, "argmin").indices;
}

// --- sum_to: the reverse of broadcasting ---------------------------------------------------------

namespace {

// A bias's gradient: dout (B,T,C) summed to (C). One pass of column sums over x as (R,C)
// (row_kernels.h) instead of one sum per leading dim, each writing a temporary.
bool sums_leading_dims_only(const Tensor& x, const Shape& shape, int64_t lead) {
  return fast_kernels() && lead > 0 && x.dtype() == kFloat32 && x.is_contiguous() && !(grad_mode_enabled() && x.requires_grad()) &&
         std::equal(shape.begin(), shape.end(), x.sizes().begin() + lead);
}

}  // namespace

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.sizes() == shape) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  if (lead < 0) {
    throw Error("sum_to: cannot sum shape " + shape_str(x.sizes()) + " to the larger shape " + shape_str(shape));
  }
  if (sums_leading_dims_only(x, shape, lead)) {
    const int64_t C = shape_numel(shape);
    Tensor out = make_empty(shape, kFloat32);
    row_kernels::column_sums(out.data_ptr<float>(), x.data_ptr<float>(), C == 0 ? 0 : x.numel() / C, C);
    return out;
  }
  Tensor r = x;
  for (int64_t d = 0; d < lead; ++d) r = sum(r, 0, false);  // drop the leading dims
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (shape[d] == 1 && r.sizes()[d] != 1) {
      r = sum(r, d, true);
    } else if (shape[d] != r.sizes()[d]) {
      throw Error("sum_to: shape " + shape_str(x.sizes()) + " is not a broadcast of " + shape_str(shape));
    }
  }
  return r;
}

}  // namespace tg
