// autograd/ops/index.cpp — picking elements by index along a dim, and splitting into views.
//
//   gather(x, dim, idx)          out[i][j][k] = x[i][idx[i][j][k]][k]     (dim = 1)
//                                dx = scatter_add(zeros_like(x), dim, idx, g)
//   scatter_add(x, dim, idx, s)  out = x; out[i][idx[i][j][k]][k] += s[i][j][k]
//                                dx = g;   ds = gather(g, dim, idx)
//   index_select(x, dim, idx)    out = x's slices idx[0], idx[1], ... along dim (idx 1-d)
//                                dx = zeros; dx's slice idx[n] += g's slice n
//   split / chunk                views (narrow): their gradients flow through the views
//
// Index tensors are int64; an index out of [0, size) is an error that names it.
#include <algorithm>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace {

// An index must lie in [0, size) (PyTorch's gather and index_select take no negative ones).
int64_t checked_index(int64_t i, int64_t size, int64_t dim, const char* op) {
  if (i < 0 || i >= size) {
    throw Error(std::string(op) + ": index " + std::to_string(i) + " is out of bounds for dimension " +
                std::to_string(dim) + " with size " + std::to_string(size));
  }
  return i;
}

// For gather and scatter_add: index has x's number of dims, and no dim but `dim` larger than x's.
void check_index_shape(const Tensor& x, const Tensor& index, int64_t dim, const char* op, const char* what) {
  check_dtype(index, kInt64, op, "index");
  if (index.dim() != x.dim() && !(x.dim() == 0 && index.dim() <= 1)) {
    throw Error(std::string(op) + ": index " + shape_str(index.sizes()) + " must have as many dims as " + what + " " +
                shape_str(x.sizes()));
  }
  for (int64_t d = 0; d < index.dim() && x.dim() > 0; ++d) {
    if (d != dim && index.sizes()[d] > x.sizes()[d]) {
      throw Error(std::string(op) + ": index " + shape_str(index.sizes()) + " is larger than " + what + " " +
                  shape_str(x.sizes()) + " in dim " + std::to_string(d) + " (only dim " + std::to_string(dim) +
                  " may be)");
    }
  }
}

// Visit every position p of `shape` (row-major): fn(linear position, offset into a tensor with
// strides `a`, offset into a tensor with strides `b`, coordinate along `dim`).
template <class F>
void for_each_position(const Shape& shape, const Shape& a, const Shape& b, int64_t dim, F fn) {
  const int64_t n = shape_numel(shape);
  Shape coord(shape.size(), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t p = 0; p < n; ++p) {
    fn(p, oa, ob, shape.empty() ? 0 : coord[dim]);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {  // odometer step
      if (++coord[d] < shape[d]) {
        oa += a[d];
        ob += b[d];
        break;
      }
      oa -= a[d] * (shape[d] - 1);
      ob -= b[d] * (shape[d] - 1);
      coord[d] = 0;
    }
  }
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined(x, "gather", "input");
  dim = wrap_dim(dim, x.dim(), "gather");
  check_index_shape(x, index, dim, "gather", "input");
  const Tensor idx = index.contiguous();
  const int64_t size = x.dim() ? x.sizes()[dim] : 1;
  Tensor out = make_empty(index.sizes(), x.dtype());
  // out[p] = x[p with its coordinate along dim replaced by index[p]]
  Shape xs = x.strides();
  if (xs.empty()) xs = Shape(index.dim(), 0);
  const int64_t dim_stride = x.dim() ? x.strides()[dim] : 0;
  Shape x_walk = xs;
  if (!x_walk.empty()) x_walk[dim] = 0;  // the coordinate along dim comes from the index
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    const T* px = x.data_ptr<T>();
    const int64_t* pi = idx.data_ptr<int64_t>();
    for_each_position(index.sizes(), x_walk, x_walk, dim, [&](int64_t p, int64_t ox, int64_t, int64_t) {
      o[p] = px[ox + checked_index(pi[p], size, dim, "gather") * dim_stride];
    });
  });
  // d/dx gather: g added back at the positions it was read from
  const Shape x_shape = x.sizes();
  record("GatherBackward0", {x}, out, {index}, [x_shape, dim](const BackwardArgs& ctx) {
    return Grads{scatter_add(zeros(x_shape, ctx.grad_out.dtype()), dim, ctx.saved[0], ctx.grad_out)};
  });
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined(x, "scatter_add", "input");
  check_defined(src, "scatter_add", "src");
  dim = wrap_dim(dim, x.dim(), "scatter_add");
  check_index_shape(x, index, dim, "scatter_add", "input");
  check_same_dtype(x, src, "scatter_add");
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (src.dim() != index.dim() || index.sizes()[d] > src.sizes()[d]) {
      throw Error("scatter_add: index " + shape_str(index.sizes()) + " is larger than src " + shape_str(src.sizes()) +
                  " in dim " + std::to_string(d));
    }
  }
  Tensor out = x.detach().clone();
  const Tensor idx = index.contiguous();
  const int64_t size = x.dim() ? x.sizes()[dim] : 1;
  Shape out_walk = out.strides();
  if (out_walk.empty()) out_walk = Shape(index.dim(), 0);
  const int64_t dim_stride = x.dim() ? out.strides()[dim] : 0;
  if (!out_walk.empty()) out_walk[dim] = 0;
  Shape src_walk = src.strides();
  if (src_walk.empty()) src_walk = Shape(index.dim(), 0);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data_ptr<T>();
    const T* ps = src.data_ptr<T>();
    const int64_t* pi = idx.data_ptr<int64_t>();
    for_each_position(index.sizes(), out_walk, src_walk, dim, [&](int64_t p, int64_t oo, int64_t os, int64_t) {
      T& slot = o[oo + checked_index(pi[p], size, dim, "scatter_add") * dim_stride];
      slot = static_cast<T>(slot + ps[os]);  // bfloat16: added in float, rounded once
    });
  });
  // d/dx = g;  d/dsrc = gather(g, dim, index)
  record("ScatterAddBackward0", {x, src}, out, {index}, [dim](const BackwardArgs& ctx) {
    return Grads{ctx.grad_out, ctx.needs_grad[1] ? gather(ctx.grad_out, dim, ctx.saved[0]) : Tensor()};
  });
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined(x, "index_select", "input");
  check_dtype(index, kInt64, "index_select", "index");
  if (index.dim() > 1) {
    throw Error("index_select: index must be 1-d (or 0-d), got shape " + shape_str(index.sizes()));
  }
  dim = wrap_dim(dim, x.dim(), "index_select");
  const Tensor flat = index.reshape({-1});
  const int64_t size = x.dim() ? x.sizes()[dim] : 1;
  std::vector<Tensor> slices;
  {
    NoGradGuard no_grad;
    const std::vector<int64_t> ids = flat.tolist<int64_t>();
    for (int64_t i : ids) {
      const int64_t at = checked_index(i, size, dim, "index_select");
      slices.push_back(x.dim() ? x.detach().narrow(dim, at, 1) : x.detach().reshape({1}));
    }
  }
  Shape out_shape = x.sizes();
  if (out_shape.empty()) out_shape = {flat.numel()};
  else out_shape[dim] = flat.numel();
  Tensor out = slices.empty() ? zeros(out_shape, x.dtype()) : cat(slices, x.dim() ? dim : 0);
  if (x.dim() == 0 && index.dim() == 0) out = out.reshape({});
  // d/dx index_select: each slice of g added back into the slice it came from
  const Shape x_shape = x.sizes();
  record("IndexSelectBackward0", {x}, out, {flat}, [x_shape, dim](const BackwardArgs& ctx) {
    if (x_shape.empty()) return Grads{ctx.grad_out.sum()};
    Shape index_shape(x_shape.size(), 1);
    index_shape[dim] = ctx.saved[0].numel();
    Shape expanded = ctx.grad_out.sizes();
    Tensor idx = ctx.saved[0].reshape(index_shape).expand(expanded).contiguous();
    return Grads{scatter_add(zeros(x_shape, ctx.grad_out.dtype()), dim, idx, ctx.grad_out)};
  });
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  check_defined(x, "split", "input");
  if (x.dim() == 0) throw Error("split: cannot split a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw Error("split: split sizes must be non-negative, got " + std::to_string(s));
    total += s;
  }
  if (total != x.sizes()[dim]) {
    throw Error("split: split sizes " + shape_str(Shape(sizes.begin(), sizes.end())) + " add up to " +
                std::to_string(total) + ", but dim " + std::to_string(dim) + " has size " +
                std::to_string(x.sizes()[dim]));
  }
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.narrow(dim, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  check_defined(x, "split", "input");
  if (x.dim() == 0) throw Error("split: cannot split a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "split");
  const int64_t n = x.sizes()[dim];
  if (split_size < 0 || (split_size == 0 && n != 0)) {
    throw Error("split: split_size must be positive (or 0 for an empty dim), got " + std::to_string(split_size));
  }
  std::vector<int64_t> sizes;
  if (n == 0) sizes.push_back(0);
  for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
  return split(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_defined(x, "chunk", "input");
  if (chunks <= 0) throw Error("chunk: number of chunks must be positive, got " + std::to_string(chunks));
  if (x.dim() == 0) throw Error("chunk: cannot chunk a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.sizes()[dim];
  const int64_t size = (n + chunks - 1) / chunks;  // ceil: so there may be fewer chunks
  return split(x, std::max<int64_t>(size, n == 0 ? 0 : 1), dim);
}

}  // namespace tg
