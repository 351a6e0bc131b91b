// autograd/internal.h — what a Tensor points to, and the plumbing the ops use to make and reach
// tensors. Internal to tapegrad: a program using tapegrad needs only the public headers
// (autograd/ops.h, tape.h, gradcheck.h, ...); an op written inside tapegrad includes this.
//
//   Storage     one heap buffer + a version counter (bumped by every in-place write, so the
//               tape can tell when a tensor saved for backward was changed afterwards).
//   TensorImpl  dtype, sizes, strides and offset (in elements) into a Storage, plus autograd
//               state: requires_grad, the producing tape entry (grad_fn), the accumulated grad.
//
// Views (view, transpose, select, narrow, expand, ...) make a new TensorImpl over the same
// Storage, so writes through a view are seen by its base.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "autograd/runtime/memory.h"  // Buffer, allocate_storage, release_storage
#include "autograd/tensor.h"

namespace tg {

struct Storage {
  explicit Storage(size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Storage(Buffer buffer, size_t n) : data(buffer.data), nbytes(n), capacity(buffer.capacity) {}

  void* data = nullptr;
  size_t nbytes = 0;    // what the tensor asked for
  size_t capacity = 0;  // what the buffer holds (>= nbytes): given back with it
  uint64_t version = 0;  // count of writes into the values: changed only by mark_written (record.h)
};

struct TensorImpl : std::enable_shared_from_this<TensorImpl> {
  std::shared_ptr<Storage> storage;
  ScalarType dtype = kFloat32;
  Shape sizes;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements
  int64_t numel = 1;

  // autograd
  bool requires_grad = false;
  bool retains_grad = false;         // keep .grad on a non-leaf (retain_grad())
  bool is_view = false;              // shares storage with a tensor it was derived from
  std::shared_ptr<Node> grad_fn;     // the tape entry that produced it; null for leaves
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient

  // In-place writes and views. Each in-place write that is recorded bumps inplace_history.
  // A view remembers the tensor it views (view_base: the root, never itself a view) and the
  // base's inplace_history when the view's grad_fn was made; when the base is written in place
  // later, the view's history is rebased on the base's new one the next time it is read.
  uint64_t inplace_history = 0;
  std::shared_ptr<TensorImpl> view_base;
  uint64_t base_history = 0;
};

// Give a view whose base was written in place since its grad_fn was made the base's new
// history (autograd/tape_inplace.cpp).
void rebase_view_history(TensorImpl& view);

// The one door from a Tensor to its TensorImpl (Tensor keeps these private).
struct TensorAccess {
  static TensorImpl& impl(const Tensor& t) { return t.impl(); }
  static TensorImpl& autograd_impl(const Tensor& t) { return t.autograd_impl(); }
  static const std::shared_ptr<TensorImpl>& impl_ptr(const Tensor& t) { return t.impl_; }
  static Tensor wrap(std::shared_ptr<TensorImpl> impl) { return Tensor(std::move(impl)); }
};
inline TensorImpl& impl_of(const Tensor& t) { return TensorAccess::impl(t); }
inline const std::shared_ptr<TensorImpl>& impl_ptr_of(const Tensor& t) { return TensorAccess::impl_ptr(t); }
inline Storage& storage_of(const Tensor& t) { return *TensorAccess::impl(t).storage; }
inline Tensor tensor_of(std::shared_ptr<TensorImpl> impl) { return TensorAccess::wrap(std::move(impl)); }

// A new contiguous tensor with uninitialised storage. Throws, starting with op:
// "negative size -2 in shape (...)", "storage size overflows: shape (...)" (the element or byte
// count does not fit int64) or "out of memory: cannot allocate N bytes".
Tensor make_empty(const Shape& shape, ScalarType dtype, const char* op = "empty");
// Write src's values into dst: src broadcast to dst's shape and converted to dst's dtype (throws
// "op: value inf at index 1 cannot be converted to type int64"). No checks, no version bump, no
// tape entry: for filling a tensor the op has just made. Writing into an existing tensor is an
// in-place op (copy_), which goes through begin_inplace / finish_inplace.
void copy_values(const Tensor& dst, const Tensor& src, const char* op);
// dst = a @ b for 2-D a (M, K) and b (K, N), written into dst (M, N), a tensor the op has just
// made or a block of one, its rows contiguous: as copy_values(dst, matmul(a, b)) with the same
// kernel and bits (autocast's too), but with no result to allocate and copy (ops/matmul_into.cpp).
void matmul_into(const Tensor& dst, const Tensor& a, const Tensor& b);
// matmul's checks of its operands, with its messages: both defined and at least 1-D, of one
// dtype it multiplies (bfloat16 only under autocast, no bool) (ops/matmul.cpp).
void check_matmul_operands(const Tensor& a, const Tensor& b);
// True when a product of a and b runs in bfloat16: autocast is on and both operands are float32
// or bfloat16 (float64 is left alone, as PyTorch does) (ops/matmul_autocast.cpp).
bool autocast_applies(const Tensor& a, const Tensor& b);
// dst = a @ b + bias, bias (N): as copy_values(dst, add(matmul(a, b), bias)), the same bits. Under
// autocast on the fast path the bias is added to the product's sums as they are stored (linear's
// add without another pass over dst); elsewhere it is that composition.
void matmul_into(const Tensor& dst, const Tensor& a, const Tensor& b, const Tensor& bias);
// A new view over t's storage with the given geometry. Its autograd state is empty: the
// result is cut from the tape (the view ops record themselves; this is their raw material).
Tensor make_view(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset);
// The element count of a shape, checked: "op: negative size -2 in shape (...)",
// "op: number of elements overflows int64: shape (...)".
int64_t checked_numel(const Shape& shape, const char* op);
// Contiguous (row-major) strides for a shape (throws when they overflow int64).
Shape contiguous_strides(const Shape& shape);
// Wrap a possibly negative dim into [0, ndim); throws "op: dim 3 out of range [-3, 2]".
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace tg
