// autograd/tape.cpp — recording entries, replaying them in reverse, anomaly checks, printing.
#include "autograd/tape.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <set>
#include <sstream>

#include "autograd/ops.h"
#include "autograd/ops/loops.h"

namespace tg {

namespace {

// The thread's tape: weak references to entries, in execution order.
struct Tape {
  std::vector<std::weak_ptr<Node>> entries;
  uint64_t next_sequence = 0;
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
  alias.impl().is_view = t.impl().is_view;
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

void check_forward_anomaly(const char* name, const std::vector<Tensor>& inputs, const Tensor& out) {
  // -inf in a forward value is legitimate (masks use it); NaN is not.
  Stats s = stats_of(out);
  if (s.nan > 0) {
    throw_anomaly(name, "tape entry #" + std::to_string(tape.next_sequence), "forward",
                  std::to_string(s.nan) + " NaN in its output " + shape_str(out.sizes()), inputs);
  }
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

// Add g into the gradient slot `slot` (undefined = empty).
void accumulate(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
  } else {
    slot = add(slot, g);
  }
}

void accumulate_into_leaf(TensorImpl& leaf, const Tensor& g) {
  Tensor current = leaf.grad ? Tensor(leaf.grad) : Tensor();
  // A fresh buffer the first time (never alias the gradient of another tensor).
  accumulate(current, current.defined() ? g : g.clone());
  leaf.grad = current.impl_ptr();
}

}  // namespace

size_t Node::saved_bytes() const {
  std::set<const Storage*> seen;
  size_t bytes = 0;
  for (const SavedTensor& s : saved) {
    if (s.data.defined() && seen.insert(s.data.storage().get()).second) bytes += s.data.storage()->nbytes;
  }
  return bytes;
}

bool grad_mode_enabled() { return grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }

bool anomaly_mode_enabled() { return anomaly_enabled; }
AnomalyModeGuard::AnomalyModeGuard(bool enabled) : previous_(anomaly_enabled) { anomaly_enabled = enabled; }
AnomalyModeGuard::~AnomalyModeGuard() { anomaly_enabled = previous_; }

bool should_record(const std::vector<Tensor>& inputs) {
  if (!grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(const char* name, const std::vector<Tensor>& inputs, Tensor& out,
            const std::vector<Tensor>& saved, BackwardFn backward) {
  if (anomaly_enabled) check_forward_anomaly(name, inputs, out);
  if (!should_record(inputs)) return;
  if (!is_floating(out.dtype())) return;  // integer and bool results carry no gradient

  auto node = std::make_shared<Node>();
  node->name = name;
  node->sequence = tape.next_sequence++;
  node->inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    Node::Input in;
    if (t.defined()) {
      in.sizes = t.sizes();
      in.dtype = t.dtype();
      in.needs_grad = t.requires_grad();
      if (t.requires_grad()) {
        if (t.is_leaf()) in.leaf = t.impl_ptr();
        else in.producer = t.grad_fn();
      }
    }
    node->inputs.push_back(std::move(in));
  }
  node->out_sizes = out.sizes();
  node->out_dtype = out.dtype();
  for (const Tensor& s : saved) {
    node->saved.push_back(SavedTensor{s.defined() ? data_alias(s) : Tensor(),
                                      s.defined() ? s.storage()->version : 0});
  }
  node->backward = std::move(backward);
  node->output = out.impl_ptr();
  out.impl().requires_grad = true;
  out.impl().grad_fn = node;
  tape.append(node);
}

namespace {

// The saved tensors of a node, after checking none was modified in place since it was saved.
std::vector<Tensor> unpack_saved(const Node& node) {
  std::vector<Tensor> out;
  out.reserve(node.saved.size());
  for (size_t i = 0; i < node.saved.size(); ++i) {
    const SavedTensor& s = node.saved[i];
    if (s.data.defined() && s.data.storage()->version != s.version) {
      throw Error("backward: one of the variables needed for gradient computation has been modified by an "
                  "inplace operation: saved tensor " + std::to_string(i) + " of " + node.name +
                  " (tape entry #" + std::to_string(node.sequence) + "), shape " + shape_str(s.data.sizes()) +
                  ", is at version " + std::to_string(s.data.storage()->version) + "; expected version " +
                  std::to_string(s.version) + " instead.");
    }
    out.push_back(s.data);
  }
  return out;
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

// Run one entry: turn the gradient of its output into gradients of its inputs.
void run_node(Node& node) {
  if (node.released) throw_released(node);
  Tensor grad_out = node.pending_grad;
  node.pending_grad = Tensor();
  if (auto out = node.output.lock(); out && out->retains_grad) {
    Tensor slot = out->grad ? Tensor(out->grad) : Tensor();
    accumulate(slot, slot.defined() ? grad_out : grad_out.clone());
    out->grad = slot.impl_ptr();
  }
  std::vector<bool> needs(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) needs[i] = node.inputs[i].needs_grad;
  const std::vector<Tensor> saved = unpack_saved(node);
  Grads grads = node.backward(BackwardArgs{grad_out, saved, needs});
  if (grads.size() != node.inputs.size()) {
    throw Error("backward: " + node.name + " returned " + std::to_string(grads.size()) + " gradients for " +
                std::to_string(node.inputs.size()) + " inputs");
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    Node::Input& in = node.inputs[i];
    Tensor g = grads[i];
    if (!in.needs_grad || !g.defined()) continue;
    if (g.sizes() != in.sizes) g = sum_to(g, in.sizes);  // undo broadcasting
    if (g.dtype() != in.dtype) g = g.to(in.dtype);
    if (anomaly_enabled) check_backward_anomaly(node, i, g, grad_out);
    if (in.producer) {
      if (in.producer->released) throw_released(*in.producer);
      accumulate(in.producer->pending_grad, g);
    } else if (in.leaf) {
      accumulate_into_leaf(*in.leaf, g);
    }
  }
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_in, bool retain_graph) {
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
  }
  NoGradGuard no_grad;  // gradients are computed without recording
  if (root.is_leaf()) {
    accumulate_into_leaf(root.impl(), grad.detach());
    return;
  }
  Node& root_node = *root.grad_fn();
  if (root_node.released) throw_released(root_node);
  accumulate(root_node.pending_grad, grad.detach());

  // Replay the tape in reverse from the root's entry. Execution order is a topological order,
  // so when an entry is reached every entry that uses its output has already run.
  std::vector<std::weak_ptr<Node>>& entries = tape.entries;
  int64_t start = static_cast<int64_t>(entries.size()) - 1;
  while (start >= 0) {
    auto n = entries[start].lock();
    if (n && n->sequence <= root_node.sequence) break;
    --start;
  }
  std::vector<std::shared_ptr<Node>> walked;
  try {
    for (int64_t i = start; i >= 0; --i) {
      std::shared_ptr<Node> node = entries[i].lock();
      if (!node || !node->pending_grad.defined()) continue;
      run_node(*node);
      walked.push_back(node);
    }
  } catch (...) {
    for (auto& e : entries)  // leave no half-summed gradients behind
      if (auto n = e.lock()) n->pending_grad = Tensor();
    throw;
  }
  if (retain_graph) return;
  for (auto& node : walked) release(*node);
  std::erase_if(entries, [](const std::weak_ptr<Node>& w) {
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

static std::string human_bytes(size_t b) {
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
  std::set<const Storage*> seen;
  size_t total = 0;
  for (auto& n : entries) {
    std::string ins;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (i) ins += " ";
      ins += shape_str(n->inputs[i].sizes);
    }
    os << "  #" << std::left << std::setw(4) << n->sequence << " " << std::setw(22) << n->name << " in "
       << std::setw(18) << ins << " -> out " << std::setw(10) << shape_str(n->out_sizes) << " keeps "
       << human_bytes(n->saved_bytes()) << "\n";
    for (const SavedTensor& s : n->saved)
      if (s.data.defined() && seen.insert(s.data.storage().get()).second) total += s.data.storage()->nbytes;
  }
  os << "  total kept for backward: " << human_bytes(total) << "\n";
  return os.str();
}

void print_tape(std::ostream& os) { os << tape_str(); }

}  // namespace tg
