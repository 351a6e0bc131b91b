// autograd/tensor.cpp — storage, geometry, element access, conversions and in-place writes.
#include "autograd/tensor.h"

#include "autograd/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>

#include "autograd/fast_kernels.h"
#include "autograd/kernels/convert_kernels.h"
#include "autograd/ops.h"
#include "autograd/ops/derivatives.h"
#include "autograd/ops/into_self.h"
#include "autograd/loops.h"
#include "autograd/record.h"

namespace tg {

// --- storage -------------------------------------------------------------------------------------

Storage::Storage(size_t n) : Storage(allocate_storage(n), n) {}

Storage::~Storage() { release_storage({data, capacity}, nbytes); }

// --- geometry helpers ----------------------------------------------------------------------------

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  return os << (shape.size() == 1 ? ",)" : ")");
}

// Every size computation below multiplies with __builtin_mul_overflow: a shape whose element
// count, strides or byte count do not fit int64 is an error, never a wrapped (small) number.

Shape contiguous_strides(const Shape& shape) {
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  Shape strides(shape.size());
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    int64_t next = 0;
    if (d > 0 && __builtin_mul_overflow(stride, std::max<int64_t>(shape[d], 1), &next)) {
      // an empty tensor is never read through its strides: the outer ones just stop growing
      if (empty) continue;
      throw Error("contiguous_strides: storage size overflows: shape " + shape_str(shape));
    }
    stride = next;
  }
  return strides;
}

// The element count of shape; *overflows tells when it does not fit int64 (and no size is 0).
static int64_t count_elements(const Shape& shape, const char* op, bool* overflows) {
  int64_t n = 1;
  *overflows = false;
  for (int64_t s : shape) {
    if (s < 0) throw Error(std::string(op) + ": negative size " + std::to_string(s) + " in shape " + shape_str(shape));
    *overflows = *overflows || __builtin_mul_overflow(n, s, &n);
  }
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    *overflows = false;
    return 0;
  }
  return n;
}

int64_t checked_numel(const Shape& shape, const char* op) {
  bool overflows = false;
  const int64_t n = count_elements(shape, op, &overflows);
  if (overflows) throw Error(std::string(op) + ": number of elements overflows int64: shape " + shape_str(shape));
  return n;
}

int64_t shape_numel(const Shape& shape) { return checked_numel(shape, "shape_numel"); }

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t rank = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dim 0 and -1
  if (dim < -rank || dim >= rank) {
    throw Error(std::string(op) + ": dim " + std::to_string(dim) + " out of range [" +
                std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
  }
  return dim < 0 ? dim + rank : dim;
}

Tensor make_empty(const Shape& shape, ScalarType dtype, const char* op) {
  bool overflows = false;
  const int64_t numel = count_elements(shape, op, &overflows);
  int64_t nbytes = 0;
  if (overflows || __builtin_mul_overflow(numel, static_cast<int64_t>(element_size(dtype)), &nbytes)) {
    throw Error(std::string(op) + ": storage size overflows: shape " + shape_str(shape) + " of " +
                dtype_name(dtype) + " needs more than INT64_MAX bytes");
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->numel = numel;
  try {
    impl->storage = std::make_shared<Storage>(static_cast<size_t>(nbytes));
  } catch (const Error& e) {
    throw Error(std::string(op) + ": " + e.what() + " for shape " + shape_str(shape) + " of " + dtype_name(dtype));
  }
  return tensor_of(std::move(impl));
}

Tensor make_view(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_of(t).storage;
  impl->dtype = t.dtype();
  impl->sizes = sizes;
  impl->strides = strides;
  impl->offset = offset;
  impl->numel = checked_numel(sizes, "view");
  impl->is_view = true;
  return tensor_of(std::move(impl));
}

// --- what it is ----------------------------------------------------------------------------------

TensorImpl& Tensor::impl() const {
  if (!impl_) throw Error("tensor is undefined (default-constructed Tensor)");
  return *impl_;
}

TensorImpl& Tensor::autograd_impl() const {
  TensorImpl& t = impl();
  if (t.view_base && t.base_history != t.view_base->inplace_history) rebase_view_history(t);
  return t;
}

ScalarType Tensor::dtype() const { return impl().dtype; }
const Shape& Tensor::sizes() const { return impl().sizes; }
const Shape& Tensor::strides() const { return impl().strides; }
int64_t Tensor::numel() const { return impl().numel; }
int64_t Tensor::storage_offset() const { return impl().offset; }
bool Tensor::is_alias_of(const Tensor& other) const { return impl().storage == other.impl().storage; }
uint64_t Tensor::_version() const { return impl().storage->version; }
bool Tensor::requires_grad() const { return autograd_impl().requires_grad; }
bool Tensor::is_leaf() const { return autograd_impl().grad_fn == nullptr; }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return autograd_impl().grad_fn; }

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

bool Tensor::is_contiguous() const {
  const TensorImpl& t = impl();
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(t.sizes.size()) - 1; d >= 0; --d) {
    if (t.sizes[d] == 1) continue;  // any stride will do along a size-1 dim
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

template <class T> T* Tensor::data_ptr() const {
  if (dtype() != dtype_of<T>()) {
    throw Error(std::string("data_ptr: tensor has dtype ") + dtype_name(dtype()) +
                ", asked for " + dtype_name(dtype_of<T>()));
  }
  return static_cast<T*>(impl().storage->data) + impl().offset;
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;
template BFloat16* Tensor::data_ptr<BFloat16>() const;
template int8_t* Tensor::data_ptr<int8_t>() const;
template Float16* Tensor::data_ptr<Float16>() const;

void* Tensor::raw_data() const {
  return static_cast<char*>(impl().storage->data) + impl().offset * static_cast<int64_t>(element_size(dtype()));
}

// --- autograd state ------------------------------------------------------------------------------

Tensor& Tensor::requires_grad_(bool requires_grad) {
  if (requires_grad && !is_floating(dtype())) {
    throw Error(std::string("requires_grad_: only floating point tensors can require gradients, got ") +
                dtype_name(dtype()));
  }
  if (!is_leaf() && !requires_grad) {
    throw Error("requires_grad_: you can only change requires_grad flags of leaf variables");
  }
  impl().requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined() && grad.sizes() != sizes()) {
    throw Error("set_grad: gradient shape " + shape_str(grad.sizes()) + " does not match tensor shape " +
                shape_str(sizes()));
  }
  if (grad.defined() && grad.dtype() != dtype()) {
    throw Error(std::string("set_grad: gradient dtype ") + dtype_name(grad.dtype()) + " does not match tensor dtype " +
                dtype_name(dtype()));
  }
  impl().grad = grad.defined() ? impl_ptr_of(grad) : nullptr;
}

void Tensor::zero_grad() const { impl().grad = nullptr; }

Tensor& Tensor::retain_grad() {
  if (!requires_grad()) throw Error("retain_grad: can't retain_grad on a tensor that doesn't require gradients");
  if (!is_leaf()) impl().retains_grad = true;
  return *this;
}

Tensor Tensor::detach() const {
  Tensor out = make_view(*this, sizes(), strides(), storage_offset());
  impl_of(out).is_view = impl().is_view;
  return out;
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const { run_backward(*this, grad, retain_graph); }

// --- values --------------------------------------------------------------------------------------

// Offset (in elements) of a full index, with bounds checks.
static int64_t element_offset(const Tensor& t, const Shape& index, const char* op) {
  if (static_cast<int64_t>(index.size()) != t.dim()) {
    throw Error(std::string(op) + ": index has " + std::to_string(index.size()) + " entries for a " +
                std::to_string(t.dim()) + "-d tensor of shape " + shape_str(t.sizes()));
  }
  int64_t off = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t i = index[d];
    const int64_t n = t.sizes()[d];
    if (i < -n || i >= n) {
      throw Error(std::string(op) + ": index " + std::to_string(i) + " is out of bounds for dim " +
                  std::to_string(d) + " with size " + std::to_string(n));
    }
    if (i < 0) i += n;
    off += i * t.strides()[d];
  }
  return off;
}

template <class T> T Tensor::at(const Shape& index) const {
  const int64_t off = element_offset(*this, index, "at");
  int64_t flat = 0;  // the row-major position, for a conversion error
  for (int64_t d = 0; d < dim(); ++d) flat = flat * sizes()[d] + (index[d] < 0 ? index[d] + sizes()[d] : index[d]);
  return visit_dtype(dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    return convert_element<T>(static_cast<const S*>(impl().storage->data)[off], "at", flat);
  });
}
template float Tensor::at<float>(const Shape&) const;
template double Tensor::at<double>(const Shape&) const;
template int64_t Tensor::at<int64_t>(const Shape&) const;
template bool Tensor::at<bool>(const Shape&) const;
template BFloat16 Tensor::at<BFloat16>(const Shape&) const;

double Tensor::at(const Shape& index) const { return at<double>(index); }

template <class T> T Tensor::item() const {
  if (numel() != 1) {
    throw Error("item: a Tensor with " + std::to_string(numel()) +
                " elements cannot be converted to Scalar");
  }
  return visit_dtype(dtype(), [&](auto tag) -> T {
    using S = typename decltype(tag)::type;
    return convert_element<T>(*data_ptr<S>(), "item", 0);
  });
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template bool Tensor::item<bool>() const;
template BFloat16 Tensor::item<BFloat16>() const;

template <class T> std::vector<T> Tensor::tolist() const {
  std::vector<T> out(static_cast<size_t>(numel()));
  Tensor c = contiguous();
  visit_dtype(dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* p = c.data_ptr<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = convert_element<T>(p[i], "tolist", static_cast<int64_t>(i));
  });
  return out;
}
template std::vector<float> Tensor::tolist<float>() const;
template std::vector<double> Tensor::tolist<double>() const;
template std::vector<int64_t> Tensor::tolist<int64_t>() const;
template std::vector<bool> Tensor::tolist<bool>() const;
template std::vector<BFloat16> Tensor::tolist<BFloat16>() const;

namespace {

// d (rows, cols) = s (rows, cols), element (i, j) at i * rs + j * cs on each side, in square tiles.
// For a transpose (one side's rows in memory, the other's columns): element by element, the
// strided side would touch a cache line per element; within a 16 x 16 tile both sides stay in L1.
// Bands of tile rows go to the threads (each element is written once, by one of them).
template <class T>
void copy_in_tiles(T* d, int64_t d_rs, int64_t d_cs, const T* s, int64_t s_rs, int64_t s_cs, int64_t rows,
                   int64_t cols) {
  constexpr int64_t kTile = 16;
  const auto copy_bands = [&](int64_t band0, int64_t band1) {
    for (int64_t i0 = band0 * kTile; i0 < std::min(rows, band1 * kTile); i0 += kTile) {
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) d[i * d_rs + j * d_cs] = s[i * s_rs + j * s_cs];
      }
    }
  };
  const int64_t bands = (rows + kTile - 1) / kTile;
  if (rows * cols < 2 * kElementwiseGrain) return copy_bands(0, bands);
  parallel_for(0, bands, std::max<int64_t>(1, kElementwiseGrain / (kTile * cols)), copy_bands);
}

}  // namespace

namespace {

// fn(i, offset) for each element of t in row-major order i, at element offset `offset` from t's
// first: an odometer over the dims, for float16's few copies (no loop of loops.h takes float16).
template <class F>
void for_each_offset(const Tensor& t, F&& fn) {
  const int64_t n = t.numel();
  if (t.is_contiguous()) {
    parallel_for(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) fn(i, i);
    });
    return;
  }
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    fn(i, offset);
    for (int64_t d = t.dim() - 1; d >= 0 && ++index[d] == t.size(d); --d) index[d] = 0;
  }
}

// A float16 tensor (a checkpoint's frozen weight: storage only) widened to float32, exactly, in
// row-major order whatever its strides. No gradient: nothing trains a float16 tensor.
Tensor widen_float16(const Tensor& t) {
  Tensor out = make_empty(t.sizes(), kFloat32, "to");
  const Float16* in = t.data_ptr<Float16>();
  float* o = out.data_ptr<float>();
  for_each_offset(t, [&](int64_t i, int64_t offset) { o[i] = static_cast<float>(in[offset]); });
  return out;
}

}  // namespace

// Copy src (broadcast to dst's shape) into dst, converting the dtype; dst may be strided. A
// floating value an integer dtype cannot hold is an error naming op, the value and its index.
void copy_values(const Tensor& dst, const Tensor& src, const char* op) {
  if (dst.dtype() == kFloat16 && src.dtype() == kFloat16 && dst.is_contiguous() && src.sizes() == dst.sizes()) {
    // a float16 weight's copy (contiguous() of a view): its bits as they are, element by element
    Float16* d = dst.data_ptr<Float16>();
    const Float16* s = src.data_ptr<Float16>();
    for_each_offset(src, [&](int64_t i, int64_t offset) { d[i] = s[offset]; });
    return;
  }
  const Shape ss = broadcast_strides(src, dst.sizes());
  visit_dtype(dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      D* d = dst.data_ptr<D>();
      const S* s = src.data_ptr<S>();
      const auto convert = [op](S v, int64_t index) { return convert_element<D>(v, op, index); };
      // n elements lying whole in memory on both sides, the first at row-major index `first`
      const auto copy_run = [&](D* to, const S* from, int64_t n, int64_t first) {
        if constexpr (std::is_same_v<D, S>) {
          std::memcpy(to, from, static_cast<size_t>(n) * sizeof(D));
        } else if constexpr (std::is_same_v<D, BFloat16> && std::is_same_v<S, float>) {
          if (fast_kernels()) convert_kernels::round_to_bf16(to, from, n);  // the same bits, vectorised
          else for (int64_t i = 0; i < n; ++i) to[i] = convert(from[i], first + i);
        } else {
          for (int64_t i = 0; i < n; ++i) to[i] = convert(from[i], first + i);
        }
      };
      // Only a floating value into an integer dtype can fail; every other copy is split over the
      // threads (a failing one stays in order, so the error names the first bad index).
      constexpr bool may_fail = std::is_integral_v<D> && !std::is_same_v<D, bool> && !std::is_integral_v<S>;
      if (dst.is_contiguous() && src.is_contiguous() && src.sizes() == dst.sizes()) {
        const int64_t n = dst.numel();
        if constexpr (may_fail) {
          copy_run(d, s, n, 0);
        } else {
          for_elements(n, [&](int64_t begin, int64_t end) { copy_run(d + begin, s + begin, end - begin, begin); });
        }
        return;
      }
      const int64_t n = dst.dim();
      if constexpr (std::is_same_v<D, S>) {
        // the last two dims transposed between the two sides (a transposed view's clone, a copy
        // into one): each matrix in tiles
        const bool transposed = n >= 2 && ((dst.stride(-1) == 1 && ss[n - 2] == 1 && ss[n - 1] != 1) ||
                                           (ss[n - 1] == 1 && dst.stride(-2) == 1 && dst.stride(-1) != 1));
        if (transposed) {
          const Shape matrices(dst.sizes().begin(), dst.sizes().end() - 1);  // a "row" here: one matrix
          for_each_row<2>(matrices, {dst.strides().data(), ss.data()}, {0, 0},
                          [&](const std::array<int64_t, 2>& off, int64_t rows, const std::array<int64_t, 2>& st) {
                            copy_in_tiles(d + off[0], st[0], dst.stride(-1), s + off[1], st[1], ss[n - 1], rows,
                                          dst.size(-1));
                          });
          return;
        }
      }
      // one row; `first` is its first element's row-major index (for a conversion's error)
      const auto copy_row = [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st,
                                int64_t first) {
        if (st[0] == 1 && st[1] == 1) {  // a row lying whole in memory (a head of q, k, v)
          copy_run(d + off[0], s + off[1], len, first);
        } else {
          for (int64_t i = 0; i < len; ++i) d[off[0] + i * st[0]] = convert(s[off[1] + i * st[1]], first + i);
        }
      };
      if constexpr (may_fail) {
        int64_t row_start = 0;  // rows come in row-major order, all of the same length
        for_each_row<2>(dst.sizes(), {dst.strides().data(), ss.data()}, {0, 0},
                        [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                          copy_row(off, len, st, row_start);
                          row_start += len;
                        });
      } else {
        // dst never has two elements in one place (the in-place ops check it; the other callers
        // write new tensors), so its rows may be written in any order, on any thread
        for_rows_in_parallel<2>(dst.sizes(), {dst.strides().data(), ss.data()}, {0, 0},
                                [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                                  copy_row(off, len, st, 0);
                                });
      }
    });
  });
}

Tensor Tensor::to(ScalarType target) const {
  if (target == dtype()) return *this;
  if (dtype() == kFloat16) return widen_float16(*this).to(target);
  if (target == kFloat16)
    throw Error(std::string("to: float16 is a storage dtype, read from F16 checkpoints and widened from; tapegrad does not "
                            "round ") + dtype_name(dtype()) + " to it (keep float32, or bfloat16: .to(tg::kBFloat16))");
  Tensor out = make_empty(sizes(), target, "to");
  copy_values(out, *this, "to");
  if (is_floating(target)) {
    const ScalarType source = dtype();
    // d/dx to(dtype): the gradient converted back to the input's dtype
    record("ToCopyBackward0", {*this}, out, {}, [source](const BackwardArgs& ctx) {
      return Grads{ctx.grad_out.to(source)};
    });
  }
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = make_empty(sizes(), dtype(), "clone");
  copy_values(out, *this, "clone");
  // d/dx clone(x): the gradient itself
  record("CloneBackward0", {*this}, out, {}, [](const BackwardArgs& ctx) { return Grads{ctx.grad_out}; });
  return out;
}

// --- in place ------------------------------------------------------------------------------------
// Each goes through begin_inplace / finish_inplace (autograd/record.h): the checks before the
// write, the version bump and the tape entry after it. A backward reads tensors only through
// the entry's saved list.

Tensor& Tensor::fill_(Scalar value) {
  Tensor old = begin_inplace(*this, {}, "fill_");
  visit_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_strided<T>(*this, checked_cast<T>(value, "fill_"));
  });
  // d/dself fill_: nothing flows back to the old value
  finish_inplace(*this, old, {}, "FillBackward0", {}, [](const BackwardArgs&) { return Grads{Tensor()}; });
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined(src, "copy_", "src");
  check_broadcasts_to(src.sizes(), sizes(), "copy_", "src");
  Tensor old = begin_inplace(*this, {src}, "copy_");
  if (src.is_alias_of(*this)) {
    copy_values(*this, src.clone().detach(), "copy_");  // overlapping memory: go through a copy
  } else {
    copy_values(*this, src, "copy_");
  }
  const ScalarType src_dtype = src.dtype();
  // d/dsrc copy_: the gradient (summed to src's shape by the engine); nothing to the old value
  finish_inplace(*this, old, {src}, "CopyBackwards", {}, [src_dtype](const BackwardArgs& ctx) {
    return Grads{Tensor(), ctx.grad_out.to(src_dtype)};
  });
  return *this;
}

Tensor& Tensor::masked_fill_(const Tensor& mask, Scalar value) {
  Tensor filled = tg::masked_fill(detach(), mask, value);
  Tensor old = begin_inplace(*this, {}, "masked_fill_");
  copy_values(*this, filled, "masked_fill_");
  // d/dself masked_fill_: the gradient where the mask is false, 0 where it filled
  finish_inplace(*this, old, {}, "MaskedFillBackward0", {mask}, [](const BackwardArgs& ctx) {
    return Grads{tg::masked_fill(ctx.grad_out, ctx.saved[0], 0.0)};
  });
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, Scalar alpha) {
  check_defined(other, "add_", "other");
  check_broadcasts_to(other.sizes(), sizes(), "add_", "other");
  const bool into_self = can_write_into_self(*this, other);  // ops/into_self.h: no temporary of self's size
  Tensor sum = into_self ? Tensor() : tg::add(detach(), other.detach(), alpha);
  Tensor old = begin_inplace(*this, {other}, "add_");
  if (into_self) {
    add_into_self(detach(), other.detach(), alpha);
  } else {
    copy_values(*this, sum, "add_");
  }
  const double a = alpha.value;
  // add's formulas (ops/derivatives.h), with self for a
  finish_inplace(*this, old, {other}, "AddBackward0", {},
                 [a](const BackwardArgs& ctx) { return add_backward(ctx, a); });
  return *this;
}

// -s, still integral if s was
static Scalar negated(Scalar s) {
  s.value = -s.value;
  return s;
}

Tensor& Tensor::add_(Scalar other) { return add_(scalar_like(other, *this)); }
Tensor& Tensor::sub_(const Tensor& other, Scalar alpha) { return add_(other, negated(alpha)); }
Tensor& Tensor::sub_(Scalar other) { return add_(scalar_like(negated(other), *this)); }

Tensor& Tensor::mul_(const Tensor& other) {
  check_defined(other, "mul_", "other");
  check_broadcasts_to(other.sizes(), sizes(), "mul_", "other");
  Tensor product = tg::mul(detach(), other.detach());
  Tensor old = begin_inplace(*this, {other}, "mul_");
  // save each factor only if the other one needs its gradient (self's value before the write)
  const bool records = should_record({old, other});
  const Tensor keep_other = records && old.requires_grad() ? other : Tensor();
  const Tensor keep_self = records && other.requires_grad() ? detach().clone() : Tensor();
  copy_values(*this, product, "mul_");
  // mul's formulas (mul_backward, ops/derivatives.h) with self's value before the write as a:
  // dself = g * other, dother = g * self_before (which is why keep_self is a copy)
  finish_inplace(*this, old, {other}, "MulBackward0", {keep_self, keep_other}, mul_backward);
  return *this;
}

Tensor& Tensor::mul_(Scalar other) {
  const bool into_self = can_write_into_self(*this, other);  // ops/into_self.h: no temporary of self's size
  Tensor product = into_self ? Tensor() : tg::mul(detach(), other);
  Tensor old = begin_inplace(*this, {}, "mul_");
  if (into_self) {
    mul_into_self(detach(), other);
  } else {
    copy_values(*this, product, "mul_");
  }
  const double s = other.value;
  finish_inplace(*this, old, {}, "MulBackward0", {},
                 [s](const BackwardArgs& ctx) { return mul_scalar_backward(ctx, s); });
  return *this;
}

Tensor& Tensor::div_(const Tensor& other) {
  check_defined(other, "div_", "other");
  check_broadcasts_to(other.sizes(), sizes(), "div_", "other");
  Tensor quotient = tg::div(detach(), other.detach());
  if (!is_floating(dtype())) {
    throw Error(std::string("div_: result type float32 can't be cast to the desired output type ") + dtype_name(dtype()));
  }
  Tensor old = begin_inplace(*this, {other}, "div_");
  const bool records = should_record({old, other});
  const Tensor keep_other = records ? other : Tensor();
  const Tensor keep_self = records && other.requires_grad() ? detach().clone() : Tensor();
  copy_values(*this, quotient, "div_");
  // div's formulas (div_backward, ops/derivatives.h) with self's value before the write as a:
  // dself = g / other, dother = -g * self_before / other^2 (which is why keep_self is a copy)
  finish_inplace(*this, old, {other}, "DivBackward0", {keep_self, keep_other}, div_backward);
  return *this;
}

Tensor& Tensor::div_(Scalar other) {
  Tensor old = begin_inplace(*this, {}, "div_");
  copy_values(*this, tg::div(detach(), other), "div_");
  const double s = other.value;
  finish_inplace(*this, old, {}, "DivBackward0", {},
                 [s](const BackwardArgs& ctx) { return div_scalar_backward(ctx, s); });
  return *this;
}

}  // namespace tg
