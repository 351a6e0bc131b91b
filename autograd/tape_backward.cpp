// autograd/tape_backward.cpp — the backward engine: loss.backward() replays, in reverse execution
// order, the entries the loss depends on. Each entry turns the gradient of its output into
// gradients of its inputs, which are summed into the entries that produced them (or into the
// .grad of leaf tensors). Each entry is released as soon as it has run, unless the graph is
// retained: what it saved for backward is freed then, not at the end of the pass.
#include <atomic>
#include <queue>

#include "autograd/loops.h"
#include "autograd/ops.h"
#include "autograd/autocast.h"
#include "autograd/tape_internal.h"

namespace tg {

namespace {

// Each backward pass has its own number, to mark the entries it has queued.
std::atomic<uint64_t> next_pass{1};

// True when nothing but the handle g can reach g's memory: g is the only handle on its
// TensorImpl, that impl the only one on its storage, and g a plain dense tensor over the whole
// storage with no autograd state. A gradient a backward has just made (and nobody kept) is one.
bool sole_owner(const Tensor& g) {
  const std::shared_ptr<TensorImpl>& impl = impl_ptr_of(g);
  return impl.use_count() == 1 && impl->storage.use_count() == 1 && !impl->is_view && !impl->view_base &&
         !impl->grad_fn && !impl->requires_grad && !impl->grad && impl->offset == 0 && g.is_contiguous() &&
         impl->storage->nbytes == g.nbytes();
}

// Add g into the gradient slot `slot` (undefined = empty). Into the slot's own buffer when
// nobody else can see it change (elementwise slot + g, as add computes it, with no new buffer
// and no copy); otherwise into a new tensor, as a slot may alias a gradient that another entry
// also received.
void accumulate(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
  } else if (slot.dtype() == g.dtype() && slot.dtype() != kBFloat16 && slot.sizes() == g.sizes() && sole_owner(slot)) {
    visit_floating(slot.dtype(), "backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_binary<T, T, T>(slot, slot, g, [](T a, T b) { return a + b; });
    });
  } else {
    slot = add(slot, g);
  }
}

// Add g into a tensor's .grad: in place into the existing buffer (as PyTorch does: a handle
// taken with x.grad() sees later backward passes, and no buffer is allocated per step). The
// first time, g itself becomes the .grad when nobody else can reach its memory (a gradient
// just computed: no copy); otherwise a copy of it (never an alias of another tensor's gradient).
void accumulate_into_grad(TensorImpl& owner, Tensor g) {
  if (owner.grad) {
    tensor_of(owner.grad).add_(g);
    return;
  }
  if (g.dtype() != owner.dtype) g = g.to(owner.dtype);
  owner.grad = sole_owner(g) ? impl_ptr_of(g) : impl_ptr_of(g.clone());
}

void release(Node& node) {
  node.saved.clear();
  node.backward = nullptr;
  node.pending_grad = Tensor();
  node.released = true;
}

void throw_released(const Node& node) {
  throw Error("backward: trying to backward through the graph a second time: " + node.name +
              " (tape entry #" + std::to_string(node.sequence) +
              ") was released by an earlier backward; pass retain_graph=true to the first backward "
              "if you need to backward twice");
}

// Run one entry: turn the gradient of its output into gradients of its inputs, and hand each
// to `deliver(producer)` after adding it to the producer's pending gradient. Without
// retain_graph the entry is released once its backward has run, as PyTorch frees an entry's
// saved tensors: the forward's activations go one entry at a time while the parameters'
// gradients are made, and the two are never all alive together. No later entry of the pass
// reads it: every entry that used its output ran before it.
template <class Deliver>
void run_node(Node& node, bool retain_graph, Deliver&& deliver) {
  if (node.released) throw_released(node);
  Tensor grad_out = node.pending_grad;
  node.pending_grad = Tensor();
  if (auto out = node.output.lock(); out && out->retains_grad) accumulate_into_grad(*out, grad_out);
  std::vector<bool> needs(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) needs[i] = node.inputs[i].needs_grad;
  const SavedTensors saved(node);
  const AutocastGuard autocast(node.autocast);  // a bf16 forward's products have bf16 gradients
  Grads grads = node.backward(BackwardArgs{grad_out, saved, needs});
  if (!retain_graph) release(node);
  if (grads.size() != node.inputs.size()) {
    throw Error("backward: " + node.name + " returned " + std::to_string(grads.size()) + " gradients for " +
                std::to_string(node.inputs.size()) + " inputs");
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    Node::Input& in = node.inputs[i];
    Tensor g = std::move(grads[i]);  // not copied: a gradient held only here can become a .grad as it is
    if (!in.needs_grad || !g.defined()) continue;
    if (g.sizes() != in.sizes) g = sum_to(g, in.sizes);  // undo broadcasting
    if (g.dtype() != in.dtype) g = g.to(in.dtype);
    if (anomaly_mode_enabled()) check_backward_anomaly(node, i, g, grad_out);
    if (in.producer) {
      if (in.producer->released) throw_released(*in.producer);
      accumulate(in.producer->pending_grad, g);
      deliver(in.producer);
    } else if (in.leaf) {
      accumulate_into_grad(*in.leaf, std::move(g));
    }
  }
}

struct LaterFirst {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence < b->sequence;
  }
};

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_in, bool retain_graph) {
  // Everything is checked before any gradient is touched.
  if (!root.requires_grad()) {
    throw Error("backward: element 0 of tensors does not require grad and does not have a grad_fn");
  }
  Tensor grad = grad_in;
  if (!grad.defined()) {
    if (root.numel() != 1) {
      throw Error("backward: grad can be implicitly created only for scalar outputs (got shape " +
                  shape_str(root.sizes()) + "); pass a gradient of the same shape");
    }
    grad = ones_like(root);
  } else if (grad.sizes() != root.sizes()) {
    throw Error("backward: gradient has shape " + shape_str(grad.sizes()) + " but the tensor has shape " +
                shape_str(root.sizes()));
  } else if (!is_floating(grad.dtype())) {
    throw Error(std::string("backward: gradient must be a floating point tensor, got ") + dtype_name(grad.dtype()));
  }
  NoGradGuard no_grad;  // gradients are computed without recording
  if (root.is_leaf()) {
    accumulate_into_grad(impl_of(root), grad.detach());
    return;
  }
  const std::shared_ptr<Node> root_node = root.grad_fn();
  if (root_node->released) throw_released(*root_node);

  // Replay in reverse execution order the entries the root depends on: take the latest queued
  // entry each time. Every entry that uses an entry's output ran later, so has already been
  // run when that entry is taken, and its gradient is complete.
  const uint64_t pass = next_pass++;
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, LaterFirst> queued;
  root_node->pending_grad = grad.to(root_node->out_dtype).detach();
  root_node->queued_in = pass;
  queued.push(root_node);
  try {
    while (!queued.empty()) {
      const std::shared_ptr<Node> node = queued.top();
      queued.pop();
      run_node(*node, retain_graph, [&](const std::shared_ptr<Node>& producer) {
        if (producer->queued_in == pass) return;
        producer->queued_in = pass;
        queued.push(producer);
      });
    }
  } catch (...) {
    // leave no half-summed gradients behind: they are all in queued entries (an entry takes its
    // own as it starts, and none is given to a released one)
    for (; !queued.empty(); queued.pop()) queued.top()->pending_grad = Tensor();
    throw;
  }
  if (retain_graph) return;  // else run_node released each entry as it went
  std::erase_if(this_thread_tape().entries, [](const std::weak_ptr<Node>& w) {
    auto n = w.lock();
    return !n || n->released;
  });
}

}  // namespace tg
