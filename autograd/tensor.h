// autograd/tensor.h — tg::Tensor: a typed, strided view over shared storage, with a link to
// the tape entry that produced it.
//
//   Tensor      a cheap handle (shared_ptr) to a TensorImpl, as torch::Tensor is: copies share
//               the same tensor. What it points to (TensorImpl: dtype, sizes, strides, offset
//               into a Storage, autograd state) is internal, in autograd/internal.h.
//
// Views (view, transpose, select, narrow, expand, ...) make a new TensorImpl over the same
// Storage, so writes through a view are seen by its base.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/error.h"

namespace tg {

// Sizes (or strides) of a tensor, one per dim: a std::vector<int64_t> under its own name, so
// the API can change what it is (a small vector, say) without changing how it is used.
struct Shape : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  Shape() = default;
  Shape(const std::vector<int64_t>& v) : std::vector<int64_t>(v) {}
  Shape(std::vector<int64_t>&& v) : std::vector<int64_t>(std::move(v)) {}
};
// Prints "(2, 3)", "(5,)" or "()" — as Python prints torch.Size's tuple.
std::ostream& operator<<(std::ostream& os, const Shape& shape);

class Node;  // a tape entry (autograd/tape.h)
class Generator;

// "(6,3)" — how shapes are written in error messages.
std::string shape_str(const Shape& shape);

// A number given to a tensor op (x + 2, masked_fill(mask, -inf)); remembers whether it was
// written as an integer, which decides the result dtype for integer tensors, as in PyTorch.
struct Scalar {
  double value;
  bool integral;
  int64_t int_value = 0;  // the exact value when integral (value rounds it past 2^53)
  Scalar(double v) : value(v), integral(false) {}
  Scalar(float v) : value(v), integral(false) {}
  Scalar(int v) : value(v), integral(true), int_value(v) {}
  Scalar(long v) : value(static_cast<double>(v)), integral(true), int_value(v) {}
  Scalar(long long v) : value(static_cast<double>(v)), integral(true), int_value(v) {}
  Scalar(bool v) : value(v ? 1.0 : 0.0), integral(true), int_value(v) {}
};

// What a Tensor points to (Storage, TensorImpl) is internal: autograd/internal.h.
struct TensorImpl;
struct TensorAccess;
struct ValuesIndices;  // max(dim), min(dim), sort, topk: values and int64 indices

class Tensor {
 public:
  Tensor() = default;  // undefined tensor

  // --- what it is -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  ScalarType dtype() const;
  const Shape& sizes() const;
  const Shape& shape() const { return sizes(); }
  const Shape& strides() const;
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(sizes().size()); }
  int64_t numel() const;
  int64_t storage_offset() const;
  bool is_contiguous() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype()); }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  bool is_alias_of(const Tensor& other) const;  // shares storage with other
  uint64_t _version() const;  // the storage's count of in-place writes (as PyTorch's _version)

  // Typed pointer to element [0,...,0]; throws if T does not match the dtype.
  template <class T> T* data_ptr() const;
  void* raw_data() const;

  // --- autograd ---------------------------------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  bool is_leaf() const;
  const std::shared_ptr<Node>& grad_fn() const;
  Tensor grad() const;                 // undefined until backward reached it
  void set_grad(const Tensor& grad) const;  // replace (or clear, with an undefined tensor)
  void zero_grad() const;                   // drop the accumulated gradient (as PyTorch's set_to_none)
  Tensor& retain_grad();               // keep .grad() on a non-leaf
  Tensor detach() const;               // same storage, cut from the tape
  // Backpropagate from this tensor. grad defaults to 1 for a one-element tensor.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;

  // --- views (share storage) --------------------------------------------------------------
  Tensor view(const Shape& shape) const;      // one size may be -1
  Tensor reshape(const Shape& shape) const;   // a view when possible, else a copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const Shape& dims) const;
  Tensor t() const;    // 2-d transpose (0-d and 1-d: itself)
  Tensor mT() const;   // swap the last two dims
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor expand(const Shape& shape) const;    // -1 keeps a size; size-1 dims broadcast
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  // Python's x[start:end:step] along dim; end is clamped; negative start/end count from the end.
  Tensor slice(int64_t dim, int64_t start, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;       // a contiguous copy (recorded on the tape)

  // --- values -----------------------------------------------------------------------------
  template <class T> T item() const;  // one-element tensor to a C++ value
  double item() const { return item<double>(); }
  // Element at a full index, as double (int64 values above 2^53 lose precision; use at<T>).
  double at(const Shape& index) const;
  template <class T> T at(const Shape& index) const;
  Tensor to(ScalarType dtype) const;  // a converted copy (itself when the dtype matches)
  template <class T> std::vector<T> tolist() const;  // row-major values converted to T

  // --- in place (write through to shared storage; bump the version) ------------------------
  Tensor& fill_(Scalar value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& copy_(const Tensor& src);  // src broadcast to this tensor's shape
  Tensor& masked_fill_(const Tensor& mask, Scalar value);
  Tensor& add_(const Tensor& other, Scalar alpha = 1);
  Tensor& add_(Scalar other);
  Tensor& sub_(const Tensor& other, Scalar alpha = 1);
  Tensor& sub_(Scalar other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(Scalar other);
  // x += y etc. write into x, as add_ (under NoGradGuard for a parameter update: w -= lr * g)
  Tensor& operator+=(const Tensor& other) { return add_(other); }
  Tensor& operator-=(const Tensor& other) { return sub_(other); }
  Tensor& operator*=(const Tensor& other) { return mul_(other); }
  Tensor& operator/=(const Tensor& other) { return div_(other); }
  Tensor& operator+=(Scalar other) { return add_(other); }
  Tensor& operator-=(Scalar other) { return sub_(other); }
  Tensor& operator*=(Scalar other) { return mul_(other); }
  Tensor& operator/=(Scalar other) { return div_(other); }
  Tensor& uniform_(double from = 0.0, double to = 1.0, Generator* gen = nullptr);
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
  Tensor& bernoulli_(double p, Generator* gen = nullptr);
  Tensor& exponential_(double lambda = 1.0, Generator* gen = nullptr);
  Tensor& random_(int64_t low, int64_t high, Generator* gen = nullptr);

  // --- ops as methods (the free functions in autograd/ops.h do the work) -------------------
  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor sum() const;
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor var(int64_t dim, bool unbiased = true, bool keepdim = false) const;
  Tensor var() const;
  Tensor max() const;
  Tensor min() const;
  ValuesIndices max(int64_t dim, bool keepdim = false) const;
  ValuesIndices min(int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin() const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim) const;
  ValuesIndices sort(int64_t dim = -1, bool descending = false) const;
  ValuesIndices topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor add(const Tensor& other, Scalar alpha = 1) const;
  Tensor add(Scalar other) const;
  Tensor sub(const Tensor& other, Scalar alpha = 1) const;
  Tensor sub(Scalar other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(Scalar other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(Scalar other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor eq(Scalar other) const;
  Tensor ne(Scalar other) const;
  Tensor lt(Scalar other) const;
  Tensor le(Scalar other) const;
  Tensor gt(Scalar other) const;
  Tensor ge(Scalar other) const;
  Tensor logical_not() const;
  Tensor isnan() const;
  Tensor isfinite() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor pow(Scalar exponent) const;
  Tensor abs() const;
  Tensor neg() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor clamp(std::optional<double> min, std::optional<double> max) const;
  Tensor clamp_min(double min) const;
  Tensor clamp_max(double max) const;
  // dtype conversions: x.float() in PyTorch; float, double, long and bool are C++ keywords.
  Tensor to_float() const;   // float32
  Tensor to_double() const;  // float64
  Tensor to_long() const;    // int64
  Tensor to_bool() const;

 private:
  friend struct TensorAccess;  // how the ops reach the storage (autograd/internal.h)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  TensorImpl& impl() const;           // throws on an undefined tensor
  TensorImpl& autograd_impl() const;  // with a view's history brought up to date
  std::shared_ptr<TensorImpl> impl_;
};

// Print in PyTorch's format: tensor([[0.4300, 0.1500], ...], requires_grad=True)
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string repr(const Tensor& t);

// Number of elements of a shape.
int64_t shape_numel(const Shape& shape);

// Tensors with names, in order: a module's state_dict, the contents of a safetensors file.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

}  // namespace tg
