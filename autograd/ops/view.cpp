// autograd/ops/view.cpp — views: new sizes/strides/offset over the same storage, no copy.
//
// Each view's backward puts the gradient back into the input's shape:
//   view/reshape  dx = g.reshape(x.shape)          transpose  dx = g.transpose(d0, d1)
//   permute       dx = g.permute(inverse)          unsqueeze  dx = g.squeeze(d)
//   expand        dx = sum_to(g, x.shape)          select     dx = zeros, dx.select(d, i) = g
//   slice         dx = zeros, dx.slice(...) = g
#include <algorithm>
#include <numeric>

#include "autograd/ops.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

namespace {

// Resolve one -1 in a requested shape and check the element count.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op) {
  Shape shape = requested;
  int64_t known = 1;
  int64_t infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) throw Error(std::string(op) + ": only one dimension can be inferred");
      infer_at = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw Error(std::string(op) + ": invalid shape dimension " + std::to_string(shape[i]));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      throw Error(std::string(op) + ": shape '" + shape_str(requested) + "' is invalid for input of size " +
                  std::to_string(numel) + " (its number of elements overflows int64)");
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0) {
      throw Error(std::string(op) + ": shape '" + shape_str(requested) + "' is invalid for input of size " +
                  std::to_string(numel));
    }
    shape[infer_at] = numel / known;
  } else if (known != numel) {
    throw Error(std::string(op) + ": shape '" + shape_str(requested) + "' is invalid for input of size " +
                std::to_string(numel));
  }
  return shape;
}

// Strides that let `new_shape` view memory laid out as (old_shape, old_strides), if any.
// Walk the old dims from the innermost, grouping them into chunks that are contiguous with
// each other; every chunk must be covered exactly by a run of new dims.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape) {
  const int64_t numel = shape_numel(old_shape);
  Shape strides(new_shape.size());
  if (numel == 0 || old_shape.empty()) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();  // stride of the innermost element of the chunk
  int64_t chunk_numel = 1;
  int64_t view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    chunk_numel *= old_shape[d];
    const bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || new_shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != chunk_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

// A recorded view: out shares x's storage; backward is fn(g).
template <class F>
Tensor recorded_view(const Tensor& x, const Shape& sizes, const Shape& strides, int64_t offset, const char* name, F fn) {
  Tensor out = make_view(x, sizes, strides, offset);
  // remember the base, so the view follows in-place writes made to it later (autograd/tape_inplace.cpp)
  const std::shared_ptr<TensorImpl>& base = impl_of(x).view_base ? impl_of(x).view_base : impl_ptr_of(x);
  impl_of(out).view_base = base;
  impl_of(out).base_history = base->inplace_history;
  record(name, {x}, out, {}, [fn](const BackwardArgs& ctx) { return Grads{fn(ctx.grad_out)}; });
  return out;
}

}  // namespace

// view() under a given node name (reshape shows PyTorch's names for the same view).
static Tensor view_named(const Tensor& x, const Shape& requested, const char* name) {
  const Shape shape = infer_shape(requested, x.numel(), "view");
  auto strides = x.is_contiguous() ? std::optional<Shape>(contiguous_strides(shape))
                                   : view_strides(x.sizes(), x.strides(), shape);
  if (!strides) {
    throw Error("view: view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces); input shape " + shape_str(x.sizes()) +
                " strides " + shape_str(x.strides()) + ", requested " + shape_str(shape) +
                ". Use .reshape(...) instead.");
  }
  const Shape in_shape = x.sizes();
  return recorded_view(x, shape, *strides, x.storage_offset(), name,
                       [in_shape](const Tensor& g) { return g.reshape(in_shape); });
}

Tensor Tensor::view(const Shape& requested) const { return view_named(*this, requested, "ViewBackward0"); }

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel(), "reshape");
  if (is_contiguous() || view_strides(sizes(), strides(), shape)) {
    return view_named(*this, shape, "ReshapeAliasBackward0");
  }
  Tensor copy;
  {
    NoGradGuard no_grad;
    copy = clone();
  }
  // d/dx reshape(x) = g.reshape(x.shape) (one entry: the copy and the view together)
  Tensor out = copy.view(shape);
  const Shape in_shape = sizes();
  record("UnsafeViewBackward0", {*this}, out, {}, [in_shape](const BackwardArgs& ctx) {
    return Grads{ctx.grad_out.reshape(in_shape)};
  });
  return out;
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  if (start_dim > end_dim) throw Error("flatten: start_dim cannot come after end_dim");
  Shape shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t n = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) {
    if (__builtin_mul_overflow(n, sizes()[d], &n)) {
      throw Error("flatten: dims " + std::to_string(start_dim) + ".." + std::to_string(end_dim) + " of shape " +
                  shape_str(sizes()) + " hold more elements than int64 can count");
    }
  }
  shape.push_back(n);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(shape);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  dim0 = wrap_dim(dim0, dim(), "transpose");
  dim1 = wrap_dim(dim1, dim(), "transpose");
  if (dim() == 0) return recorded_view(*this, sizes(), strides(), storage_offset(), "TransposeBackward0",
                                       [](const Tensor& g) { return g; });
  Shape sz = sizes(), st = strides();
  std::swap(sz[dim0], sz[dim1]);
  std::swap(st[dim0], st[dim1]);
  return recorded_view(*this, sz, st, storage_offset(), "TransposeBackward0",
                       [dim0, dim1](const Tensor& g) { return g.transpose(dim0, dim1); });
}

Tensor Tensor::permute(const Shape& dims) const {
  if (static_cast<int64_t>(dims.size()) != dim()) {
    throw Error("permute: number of dims don't match in permute: got " + std::to_string(dims.size()) +
                " dims for a tensor of shape " + shape_str(sizes()));
  }
  Shape sz(dims.size()), st(dims.size()), inverse(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    if (seen[d]) throw Error("permute: repeated dim " + std::to_string(d) + " in " + shape_str(dims));
    seen[d] = true;
    sz[i] = sizes()[d];
    st[i] = strides()[d];
    inverse[d] = static_cast<int64_t>(i);
  }
  return recorded_view(*this, sz, st, storage_offset(), "PermuteBackward0",
                       [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor Tensor::t() const {
  if (dim() > 2) {
    throw Error("t: t() expects a tensor with <= 2 dimensions, but self is " + std::to_string(dim()) + "D");
  }
  if (dim() < 2) return recorded_view(*this, sizes(), strides(), storage_offset(), "TBackward0",
                                      [](const Tensor& g) { return g; });
  Shape sz{sizes()[1], sizes()[0]}, st{strides()[1], strides()[0]};
  return recorded_view(*this, sz, st, storage_offset(), "TBackward0", [](const Tensor& g) { return g.t(); });
}

Tensor Tensor::mT() const {
  if (dim() < 2) {
    throw Error("mT: tensor.mT is only supported on matrices or batches of matrices. Got " +
                std::to_string(dim()) + "-D tensor.");
  }
  return transpose(-2, -1);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape sz = sizes(), st = strides();
  const int64_t new_stride = d < dim() ? sizes()[d] * strides()[d] : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  return recorded_view(*this, sz, st, storage_offset(), "UnsqueezeBackward0",
                       [d](const Tensor& g) { return g.squeeze(d); });
}

Tensor Tensor::squeeze() const {
  Shape sz, st;
  for (int64_t d = 0; d < dim(); ++d) {
    if (sizes()[d] != 1) {
      sz.push_back(sizes()[d]);
      st.push_back(strides()[d]);
    }
  }
  const Shape in_shape = sizes();
  return recorded_view(*this, sz, st, storage_offset(), "SqueezeBackward0",
                       [in_shape](const Tensor& g) { return g.reshape(in_shape); });
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  Shape sz = sizes(), st = strides();
  if (dim() > 0 && sizes()[d] == 1) {
    sz.erase(sz.begin() + d);
    st.erase(st.begin() + d);
  }
  const Shape in_shape = sizes();
  return recorded_view(*this, sz, st, storage_offset(), "SqueezeBackward1",
                       [in_shape](const Tensor& g) { return g.reshape(in_shape); });
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < sizes().size()) {
    throw Error("expand: the number of sizes provided (" + std::to_string(shape.size()) +
                ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(dim()) + ")");
  }
  const size_t lead = shape.size() - sizes().size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < -1) {
      throw Error("expand: the target size " + std::to_string(shape[i]) + " at dim " + std::to_string(i) +
                  " is invalid (sizes are >= 0, or -1 to keep the existing size).  Target sizes: " + shape_str(shape));
    }
  }
  Shape sz(shape.size()), st(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      if (shape[i] < 0) throw Error("expand: -1 is not allowed in a leading, non-existing dimension " + std::to_string(i));
      sz[i] = shape[i];
      st[i] = 0;
      continue;
    }
    const int64_t have = sizes()[i - lead];
    const int64_t want = shape[i] == -1 ? have : shape[i];
    if (have == want) {
      sz[i] = have;
      st[i] = strides()[i - lead];
    } else if (have == 1) {
      sz[i] = want;
      st[i] = 0;
    } else {
      throw Error("expand: the expanded size of the tensor (" + std::to_string(want) +
                  ") must match the existing size (" + std::to_string(have) + ") at non-singleton dimension " +
                  std::to_string(i) + ".  Target sizes: " + shape_str(shape) + ".  Tensor sizes: " + shape_str(sizes()));
    }
  }
  checked_numel(sz, "expand");  // stride 0 needs no memory, but the element count must fit int64
  const Shape in_shape = sizes();
  return recorded_view(*this, sz, st, storage_offset(), "ExpandBackward0",
                       [in_shape](const Tensor& g) { return sum_to(g, in_shape); });
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  if (dim() == 0) throw Error("select: select() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = sizes()[d];
  if (index < -n || index >= n) {
    throw Error("select: index " + std::to_string(index) + " out of range for tensor of size " +
                shape_str(sizes()) + " at dimension " + std::to_string(d));
  }
  if (index < 0) index += n;
  Shape sz = sizes(), st = strides();
  const int64_t offset = storage_offset() + index * st[d];
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  const Shape in_shape = sizes();
  const ScalarType dt = dtype();
  return recorded_view(*this, sz, st, offset, "SelectBackward0", [in_shape, dt, d, index](const Tensor& g) {
    Tensor dx = zeros(in_shape, dt);
    dx.select(d, index).copy_(g);
    return dx;
  });
}

Tensor Tensor::slice(int64_t d, int64_t start, std::optional<int64_t> end_opt, int64_t step) const {
  if (dim() == 0) throw Error("slice: slice() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim(), "slice");
  if (step <= 0) throw Error("slice: slice step must be positive, got " + std::to_string(step));
  const int64_t n = sizes()[d];
  int64_t end = end_opt.value_or(n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sz = sizes(), st = strides();
  const int64_t offset = storage_offset() + start * st[d];
  sz[d] = end == start ? 0 : (end - start - 1) / step + 1;  // ceil((end - start) / step), without overflow
  // along a dim of size 0 or 1 the stride is never used; otherwise step < n keeps the product in range
  if (sz[d] > 1) st[d] *= step;
  const Shape in_shape = sizes();
  const ScalarType dt = dtype();
  return recorded_view(*this, sz, st, offset, "SliceBackward0", [in_shape, dt, d, start, end, step](const Tensor& g) {
    Tensor dx = zeros(in_shape, dt);
    dx.slice(d, start, end, step).copy_(g);
    return dx;
  });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  if (dim() == 0) throw Error("narrow: narrow() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = sizes()[d];
  if (start < 0) start += n;
  // length > n - start, not start + length > n: that sum can overflow (start 1, length INT64_MAX)
  if (start < 0 || start > n || length < 0 || length > n - start) {
    throw Error("narrow: start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
                ") exceeds dimension size (" + std::to_string(n) + ") of dim " + std::to_string(d));
  }
  return slice(d, start, start + length, 1);
}

}  // namespace tg
