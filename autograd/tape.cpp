// autograd/tape.cpp — recording entries, replaying them in reverse, in-place writes and the
// views that follow them, anomaly checks, printing.
#include "autograd/record.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <queue>
#include <set>
#include <sstream>
#include <string_view>

#include "autograd/ops.h"
#include "autograd/loops.h"

namespace tg {

namespace {

// Execution order, one counter for all threads: an entry's inputs always have smaller numbers.
std::atomic<uint64_t> next_sequence{0};
// Each backward pass has its own number, to mark the entries it has queued.
std::atomic<uint64_t> next_pass{1};

// The thread's tape: weak references to entries, in execution order.
struct Tape {
  std::vector<std::weak_ptr<Node>> entries;
  size_t compact_at = 1024;  // drop expired references when the tape grows past this

  void append(const std::shared_ptr<Node>& node) {
    if (entries.size() >= compact_at) {
      std::erase_if(entries, [](const std::weak_ptr<Node>& w) { return w.expired(); });
      compact_at = std::max<size_t>(1024, 2 * entries.size());
    }
    entries.push_back(node);
  }
};

thread_local Tape tape;
thread_local bool grad_enabled = true;

bool anomaly_from_environment() {
  const char* v = std::getenv("TG_DETECT_ANOMALY");
  return v && std::string(v) != "0" && std::string(v) != "";
}
thread_local bool anomaly_enabled = anomaly_from_environment();

// A data-only alias of t: same storage and geometry, no autograd state.
Tensor data_alias(const Tensor& t) {
  Tensor alias = make_view(t, t.sizes(), t.strides(), t.storage_offset());
  impl_of(alias).is_view = impl_of(t).is_view;
  return alias;
}

// --- anomaly mode ---

struct Stats {
  int64_t nan = 0, inf = 0;
  double min = INFINITY, max = -INFINITY, mean = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  if (!t.defined() || !is_floating(t.dtype())) return s;
  double total = 0;
  int64_t finite = 0;
  for (double v : t.tolist<double>()) {
    if (std::isnan(v)) { s.nan++; continue; }
    if (std::isinf(v)) { s.inf++; }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    if (std::isfinite(v)) { total += v; finite++; }
  }
  s.mean = finite ? total / static_cast<double>(finite) : NAN;
  return s;
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << shape_str(t.sizes()) << " " << dtype_name(t.dtype());
  if (is_floating(t.dtype())) {
    Stats s = stats_of(t);
    os << " min " << s.min << " max " << s.max << " mean " << s.mean << " nan " << s.nan << " inf " << s.inf;
  }
  return os.str();
}

void throw_anomaly(const std::string& op, const std::string& entry, const char* direction,
                   const std::string& what, const std::vector<Tensor>& inputs) {
  std::ostringstream os;
  os << "anomaly: " << op << " (" << entry << ") " << direction << " produced " << what;
  for (size_t i = 0; i < inputs.size(); ++i) os << "\n  input " << i << ": " << describe(inputs[i]);
  throw Error(os.str());
}

void check_backward_anomaly(const Node& node, size_t input, const Tensor& grad, const Tensor& grad_out) {
  Stats s = stats_of(grad);
  if (s.nan > 0 || s.inf > 0) {
    throw_anomaly(node.name, "tape entry #" + std::to_string(node.sequence), "backward",
                  std::to_string(s.nan) + " NaN and " + std::to_string(s.inf) +
                      " Inf in the gradient of input " + std::to_string(input),
                  {grad_out});
  }
}

// The edge from an entry to one of its inputs.
Node::Input edge_to(const Tensor& t) {
  Node::Input in;
  if (!t.defined()) return in;
  in.sizes = t.sizes();
  in.dtype = t.dtype();
  in.needs_grad = t.requires_grad();
  if (in.needs_grad) {
    if (t.is_leaf()) in.leaf = impl_ptr_of(t);
    else in.producer = t.grad_fn();
  }
  return in;
}

// Make `node` the history of `out` and put it on this thread's tape.
void attach(const std::shared_ptr<Node>& node, TensorImpl& out) {
  node->out_sizes = out.sizes;
  node->out_dtype = out.dtype;
  node->output = out.weak_from_this();
  out.requires_grad = true;
  out.grad_fn = node;
  tape.append(node);
}

}  // namespace

// --- saved tensors ---------------------------------------------------------------------------------

size_t SavedTensors::size() const { return node_.saved.size(); }

const Tensor& SavedTensors::operator[](size_t i) const {
  if (i >= node_.saved.size()) {
    throw Error("backward: " + node_.name + " read saved tensor " + std::to_string(i) + " but its op saved " +
                std::to_string(node_.saved.size()));
  }
  const SavedTensor& s = node_.saved[i];
  if (s.data.defined() && storage_of(s.data).version != s.version) {
    throw Error("backward: one of the variables needed for gradient computation has been modified by an "
                "inplace operation: saved tensor " + std::to_string(i) + " of " + node_.name +
                " (tape entry #" + std::to_string(node_.sequence) + "), shape " + shape_str(s.data.sizes()) +
                ", is at version " + std::to_string(storage_of(s.data).version) + "; expected version " +
                std::to_string(s.version) + " instead.");
  }
  return s.data;
}

namespace {

// Bytes of the storages `node` keeps that are not in `seen` yet (then added to it).
size_t add_saved_storages(const Node& node, std::set<const Storage*>& seen) {
  size_t bytes = 0;
  for (const SavedTensor& s : node.saved) {
    if (s.data.defined() && seen.insert(&storage_of(s.data)).second) bytes += storage_of(s.data).nbytes;
  }
  return bytes;
}

}  // namespace

size_t Node::saved_bytes() const {
  std::set<const Storage*> seen;
  return add_saved_storages(*this, seen);
}

size_t saved_bytes(const std::vector<std::shared_ptr<Node>>& entries) {
  std::set<const Storage*> seen;
  size_t total = 0;
  for (const auto& n : entries) total += add_saved_storages(*n, seen);
  return total;
}

Node::~Node() {
  // Take the producers this entry owns; free each one we hold the last reference to after
  // taking its own producers in turn, so no destructor runs inside another.
  std::vector<std::shared_ptr<Node>> orphans;
  auto adopt = [&orphans](Node& n) {
    for (Input& in : n.inputs)
      if (in.producer) orphans.push_back(std::move(in.producer));
  };
  adopt(*this);
  while (!orphans.empty()) {
    std::shared_ptr<Node> n = std::move(orphans.back());
    orphans.pop_back();
    if (n.use_count() == 1) adopt(*n);
  }  // n is freed here, its own producers already taken
}

// --- modes -----------------------------------------------------------------------------------------

bool grad_mode_enabled() { return grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }

bool anomaly_mode_enabled() { return anomaly_enabled; }
AnomalyModeGuard::AnomalyModeGuard(bool enabled) : previous_(anomaly_enabled) { anomaly_enabled = enabled; }
AnomalyModeGuard::~AnomalyModeGuard() { anomaly_enabled = previous_; }

// --- recording -------------------------------------------------------------------------------------

bool should_record(const std::vector<Tensor>& inputs) {
  if (!grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool begin_record(const char* name, const std::vector<Tensor>& inputs, const Tensor& out) {
  // integer and bool results carry no gradient
  const bool records = is_floating(out.dtype()) && should_record(inputs);
  if (anomaly_enabled) {
    // -inf in a forward value is legitimate (masks use it); NaN is not.
    Stats s = stats_of(out);
    if (s.nan > 0) {
      throw_anomaly(name,
                    records ? "tape entry #" + std::to_string(next_sequence.load())
                            : std::string(grad_enabled ? "not recorded: no input requires grad"
                                                       : "not recorded: grad mode is off"),
                    "forward", std::to_string(s.nan) + " NaN in its output " + shape_str(out.sizes()), inputs);
    }
  }
  return records;
}

void append_entry(const char* name, const std::vector<Tensor>& inputs, Tensor& out,
                  const std::vector<Tensor>& saved, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->name = name;
  node->sequence = next_sequence++;
  node->inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) node->inputs.push_back(edge_to(t));
  node->saved.reserve(saved.size());
  for (const Tensor& s : saved) {
    node->saved.push_back(SavedTensor{s.defined() ? data_alias(s) : Tensor(),
                                      s.defined() ? storage_of(s).version : 0});
  }
  node->backward = std::move(backward);
  attach(node, impl_of(out));
}

// --- views whose base was written in place -------------------------------------------------------

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

}  // namespace

// --- in-place writes -------------------------------------------------------------------------------

namespace {

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
  if (grad_enabled) {
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
  storage_of(self).version++;
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
  node->sequence = next_sequence++;
  node->inputs.push_back(edge_to(tensor_of(base)));
  // d/dbase view: g added back at the positions the view reads
  node->backward = [geometry](const BackwardArgs& ctx) { return Grads{view_backward(ctx.grad_out, geometry)}; };
  attach(node, view);
}

// --- backward --------------------------------------------------------------------------------------

namespace {

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
  } else if (slot.dtype() == g.dtype() && slot.sizes() == g.sizes() && sole_owner(slot)) {
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
// to `deliver(producer)` after adding it to the producer's pending gradient.
template <class Deliver>
void run_node(Node& node, Deliver&& deliver) {
  if (node.released) throw_released(node);
  Tensor grad_out = node.pending_grad;
  node.pending_grad = Tensor();
  if (auto out = node.output.lock(); out && out->retains_grad) accumulate_into_grad(*out, grad_out);
  std::vector<bool> needs(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) needs[i] = node.inputs[i].needs_grad;
  const SavedTensors saved(node);
  Grads grads = node.backward(BackwardArgs{grad_out, saved, needs});
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
    if (anomaly_enabled) check_backward_anomaly(node, i, g, grad_out);
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
  std::vector<std::shared_ptr<Node>> walked;
  root_node->pending_grad = grad.to(root_node->out_dtype).detach();
  root_node->queued_in = pass;
  queued.push(root_node);
  try {
    while (!queued.empty()) {
      std::shared_ptr<Node> node = queued.top();
      queued.pop();
      walked.push_back(node);
      run_node(*node, [&](const std::shared_ptr<Node>& producer) {
        if (producer->queued_in == pass) return;
        producer->queued_in = pass;
        queued.push(producer);
      });
    }
  } catch (...) {
    // leave no half-summed gradients behind
    for (auto& n : walked) n->pending_grad = Tensor();
    for (; !queued.empty(); queued.pop()) queued.top()->pending_grad = Tensor();
    throw;
  }
  if (retain_graph) return;
  for (auto& node : walked) release(*node);
  std::erase_if(tape.entries, [](const std::weak_ptr<Node>& w) {
    auto n = w.lock();
    return !n || n->released;
  });
}

// --- reading the tape ----------------------------------------------------------------------------

std::vector<std::shared_ptr<Node>> tape_entries() {
  std::vector<std::shared_ptr<Node>> out;
  for (auto& w : tape.entries)
    if (auto n = w.lock(); n && !n->released) out.push_back(n);
  return out;
}

size_t tape_size() { return tape_entries().size(); }

std::string human_bytes(size_t b) {
  std::ostringstream os;
  if (b < 1024) os << b << " B";
  else if (b < 1024 * 1024) os << std::fixed << std::setprecision(1) << b / 1024.0 << " KiB";
  else os << std::fixed << std::setprecision(1) << b / (1024.0 * 1024.0) << " MiB";
  return os.str();
}

std::string tape_str() {
  std::ostringstream os;
  auto entries = tape_entries();
  os << "tape: " << entries.size() << (entries.size() == 1 ? " entry" : " entries") << " (backward runs them bottom to top)\n";
  for (auto& n : entries) {
    std::string ins;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (i) ins += " ";
      ins += shape_str(n->inputs[i].sizes);
    }
    os << "  #" << std::left << std::setw(4) << n->sequence << " " << std::setw(22) << n->name << " in "
       << std::setw(18) << ins << " -> out " << std::setw(10) << shape_str(n->out_sizes) << " keeps "
       << human_bytes(n->saved_bytes()) << "\n";
  }
  os << "  total kept for backward: " << human_bytes(saved_bytes(entries)) << "\n";
  return os.str();
}

void print_tape(std::ostream& os) { os << tape_str(); }

}  // namespace tg
