// autograd/tape_inplace.cpp — in-place writes: the version counter, the checks before a write and
// the tape entry after it, and the views that follow a base written in place.
//
// Versions: every Storage counts the writes into its values (Storage::version). A tape entry
// records the version of each tensor it saves, and reading a saved tensor whose storage has
// moved on since throws (SavedTensors in tape.cpp). mark_written is the one place the count
// changes. A tensor an op has just made and is still filling is not written in place: nobody
// can have saved it yet, so it keeps version 0 (as PyTorch's fresh tensors).
#include <algorithm>
#include <string_view>

#include "autograd/loops.h"
#include "autograd/ops.h"
#include "autograd/tape_internal.h"

namespace tg {

void mark_written(const Tensor& t) { storage_of(t).version++; }

// --- where a view sits in its base -----------------------------------------------------------------

namespace {

// Where a view's elements sit in its base: both described by sizes, strides and offsets into
// one storage. The base is dense (no gaps, no overlap), so storage offset s is base element
// s - base.offset in the base's memory order.
struct ViewGeometry {
  Shape base_sizes, base_strides;
  int64_t base_offset = 0;
  Shape sizes, strides;
  int64_t offset = 0;
};

// d/dbase of view = as_strided(base): g added into a zero gradient of the base at the
// positions the view reads (added, not copied: an expanded view reads one position many times).
Tensor view_backward(const Tensor& g, const ViewGeometry& v) {
  const Tensor gc = g.contiguous();
  Tensor dflat = zeros({shape_numel(v.base_sizes)}, g.dtype());  // the base's memory, in order
  const Shape g_strides = contiguous_strides(v.sizes);
  visit_floating(g.dtype(), "backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = dflat.data_ptr<T>();
    const T* pg = gc.data_ptr<T>();
    for_each_row<2>(v.sizes, {v.strides.data(), g_strides.data()}, {v.offset - v.base_offset, 0},
                    [&](const std::array<int64_t, 2>& off, int64_t len, const std::array<int64_t, 2>& st) {
                      for (int64_t i = 0; i < len; ++i) d[off[0] + i * st[0]] += pg[off[1] + i * st[1]];
                    });
  });
  return make_view(dflat, v.base_sizes, v.base_strides, 0);
}

// Dense: the elements fill [offset, offset + numel) of the storage exactly once.
bool is_dense(const TensorImpl& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size), size > 1
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.sizes[d] > 1) dims.push_back({t.strides[d], t.sizes[d]});
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// A zero gradient laid out as the base (dense, in the base's memory order).
Tensor dense_like_base(const ViewGeometry& v, ScalarType dtype) {
  Tensor flat = zeros({shape_numel(v.base_sizes)}, dtype);
  return make_view(flat, v.base_sizes, v.base_strides, 0);
}

// The view's elements inside a tensor made by dense_like_base.
Tensor region_of(const Tensor& dbase, const ViewGeometry& v) {
  return make_view(dbase, v.sizes, v.strides, v.offset - v.base_offset);
}

// --- in-place writes -------------------------------------------------------------------------------


// A handle to t's history (grad_fn, requires_grad) as it is now, before an in-place write.
Tensor history_of(const Tensor& t) {
  auto old = std::make_shared<TensorImpl>(TensorAccess::autograd_impl(t));
  old->grad = nullptr;
  old->retains_grad = false;
  old->view_base = nullptr;
  return tensor_of(std::move(old));
}

ViewGeometry geometry_of(const TensorImpl& view) {
  const TensorImpl& base = *view.view_base;
  return ViewGeometry{base.sizes, base.strides, base.offset, view.sizes, view.strides, view.offset};
}

// An in-place op on a view writes into its base: the base gets the new history
//   base_new = base_old with the view's region replaced by op(region, others)
// so d base_old = g outside the region and the op's gradient for self inside it, and each
// other input gets the op's gradient for it, computed from g's region.
void record_on_base(Tensor& view, const std::vector<Tensor>& others, const char* name,
                    const std::vector<Tensor>& saved, BackwardFn op_backward) {
  Tensor base = tensor_of(impl_of(view).view_base);
  std::vector<Tensor> inputs{history_of(base)};
  inputs.insert(inputs.end(), others.begin(), others.end());
  const ViewGeometry geometry = geometry_of(impl_of(view));
  auto copy_slices = [geometry, op_backward, name = std::string(name)](const BackwardArgs& ctx) {
    Tensor dbase = dense_like_base(geometry, ctx.grad_out.dtype());
    dbase.copy_(ctx.grad_out);
    Tensor region = region_of(dbase, geometry);
    const Tensor dregion = region.clone();
    const SavedTensors& saved_list = ctx.saved;
    Grads g = op_backward(BackwardArgs{dregion, saved_list, ctx.needs_grad});
    if (g.size() != ctx.needs_grad.size()) throw Error("backward: " + name + " returned the wrong number of gradients");
    if (g[0].defined()) region.copy_(sum_to(g[0], geometry.sizes));
    else region.zero_();
    g[0] = dbase;
    return g;
  };
  append_entry("CopySlices", inputs, base, saved, copy_slices);
  impl_of(base).inplace_history++;  // the view, and every other view of base, follow it
}

}  // namespace

Tensor begin_inplace(const Tensor& self, const std::vector<Tensor>& others, const char* op) {
  // fill_ writes one value to every element, so elements sharing a location agree (PyTorch allows it)
  if (std::string_view(op) != "fill_") check_no_internal_overlap(self, op);
  if (grad_mode_enabled()) {
    // A leaf that requires grad must not be overwritten: its value is what the gradient is for.
    if (self.requires_grad() && self.is_leaf()) {
      throw Error(std::string(op) + ": a leaf Variable that requires grad is being used in an in-place operation.");
    }
    bool any = self.requires_grad();
    for (const Tensor& t : others) any = any || (t.defined() && t.requires_grad());
    const TensorImpl& s = impl_of(self);
    if (any && s.is_view) {
      if (!s.view_base) {
        throw Error(std::string(op) + ": in-place operation on a tensor that shares memory with a tensor in autograd "
                    "(a detached alias) is not supported; clone() it first");
      }
      if (s.view_base->requires_grad && !s.view_base->grad_fn) {
        throw Error(std::string(op) + ": a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation.");
      }
      if (!is_dense(*s.view_base)) {
        throw Error(std::string(op) + ": in-place operation on a view whose base (shape " + shape_str(s.view_base->sizes) +
                    ", strides " + shape_str(s.view_base->strides) + ") is not dense is not supported; clone() it first");
      }
    }
  }
  return history_of(self);
}

void finish_inplace(Tensor& self, const Tensor& old_history, const std::vector<Tensor>& others,
                    const char* name, const std::vector<Tensor>& saved, BackwardFn backward) {
  mark_written(self);
  std::vector<Tensor> inputs{old_history};
  inputs.insert(inputs.end(), others.begin(), others.end());
  if (!begin_record(name, inputs, self)) return;
  if (impl_of(self).view_base) {
    record_on_base(self, others, name, saved, std::move(backward));
    return;
  }
  append_entry(name, inputs, self, saved, std::move(backward));
  impl_of(self).inplace_history++;  // views of self follow its new history
}

// --- views whose base was written in place: rebased on read -------------------------------------

void rebase_view_history(TensorImpl& view) {
  const std::shared_ptr<TensorImpl> base = view.view_base;
  view.base_history = base->inplace_history;
  if (!base->requires_grad) return;
  if (!is_dense(*base)) {
    throw Error("backward: the base of a view of shape " + shape_str(view.sizes) + " (base shape " +
                shape_str(base->sizes) + ", strides " + shape_str(base->strides) +
                ") was written in place, and tapegrad cannot follow a view of a base that is not dense");
  }
  const ViewGeometry geometry{base->sizes, base->strides, base->offset, view.sizes, view.strides, view.offset};
  auto node = std::make_shared<Node>();
  node->name = "AsStridedBackward0";
  node->sequence = take_sequence_number();
  node->inputs.push_back(edge_to(tensor_of(base)));
  // d/dbase view: g added back at the positions the view reads
  node->backward = [geometry](const BackwardArgs& ctx) { return Grads{view_backward(ctx.grad_out, geometry)}; };
  attach(node, view);
}

}  // namespace tg
