// autograd/ops/matmul_autocast.cpp — what autocast's bfloat16 products need besides the product
// itself (autograd/autocast.h): when a product runs in bfloat16 (autocast_applies), and the
// bfloat16 copy of an activation a product keeps for its backward (kept_for_product).
//
// Why a copy, and why cached: under autocast a product rounds its float32 operands to bfloat16
// anyway, so an activation it keeps for backward may as well be kept rounded: half the memory,
// and the backward's product reads exactly the values the forward's did. A layer's input often
// feeds several products (attention's three projections read the same x); they share one copy,
// as they would share the float32 tensor, so the copy made last on this thread is remembered.
// matmul (ops/matmul.cpp), feed_forward and masked_scaled_attention keep their operands this way.
#include <memory>

#include "autograd/autocast.h"
#include "autograd/internal.h"
#include "autograd/ops/derivatives.h"

namespace tg {

bool autocast_applies(const Tensor& a, const Tensor& b) {
  auto takes = [](ScalarType t) { return t == kFloat32 || t == kBFloat16; };
  return autocast_dtype() == kBFloat16 && takes(a.dtype()) && takes(b.dtype());
}

namespace {

// The last activation kept_for_product copied on this thread, and its copy. The copy is
// remembered by its buffer, not by its Tensor: the tape keeps an alias of what an op saved (a
// Tensor of its own over the same buffer), and the Tensor kept_for_product returned is gone once
// its op has returned. Weak pointers: the cache keeps nothing alive.
struct LastCopy {
  std::weak_ptr<Storage> source;
  int64_t offset = 0;
  Shape sizes, strides;
  uint64_t version = 0;
  std::weak_ptr<Storage> copy;  // bfloat16, of the source's sizes
  Shape copy_strides;
  uint64_t copy_version = 0;
};
thread_local LastCopy last_copy;

// A parameter (a leaf that requires grad), or a view of one (linear's weight.t()).
bool is_parameter_or_view_of_one(const TensorImpl& impl) {
  const TensorImpl& root = impl.is_view && impl.view_base ? *impl.view_base : impl;
  return root.grad_fn == nullptr && root.requires_grad;
}

// The copy `last` remembers, if it is of exactly this view of t's buffer, neither written
// since, and still alive.
std::shared_ptr<Storage> remembered_copy(const LastCopy& last, const TensorImpl& impl) {
  if (last.source.lock() != impl.storage || last.offset != impl.offset || last.sizes != impl.sizes ||
      last.strides != impl.strides || last.version != impl.storage->version)
    return nullptr;
  std::shared_ptr<Storage> copy = last.copy.lock();
  return copy && copy->version == last.copy_version ? copy : nullptr;
}

}  // namespace

Tensor kept_for_product(const Tensor& t) {
  const TensorImpl& impl = impl_of(t);
  if (autocast_dtype() != kBFloat16 || t.dtype() != kFloat32 || is_parameter_or_view_of_one(impl)) return t;
  LastCopy& last = last_copy;
  if (std::shared_ptr<Storage> copy = remembered_copy(last, impl)) {
    auto shared = std::make_shared<TensorImpl>();  // a Tensor of its own over the copy's buffer
    shared->storage = std::move(copy);
    shared->dtype = kBFloat16;
    shared->sizes = impl.sizes;
    shared->strides = last.copy_strides;
    shared->numel = impl.numel;
    return tensor_of(std::move(shared));
  }
  Tensor copy = t.detach().to(kBFloat16);
  last = LastCopy{impl.storage, impl.offset, impl.sizes, impl.strides, impl.storage->version,
                  impl_of(copy).storage, copy.strides(), storage_of(copy).version};
  return copy;
}

}  // namespace tg
