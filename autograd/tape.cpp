// autograd/tape.cpp — the thread's tape and how an entry gets on it: grad mode, record, the
// edges to an entry's inputs, and the saved tensors a backward reads (version-checked).
// The rest of the tape: tape_inplace.cpp (in-place writes, the version counter, views),
// tape_backward.cpp (replaying the tape), tape_anomaly.cpp, tape_reading.cpp.
#include "autograd/autocast.h"
#include "autograd/tape_internal.h"

#include <algorithm>
#include <atomic>

namespace tg {

namespace {

std::atomic<uint64_t> next_sequence{0};
thread_local Tape tape;
thread_local bool grad_enabled = true;

// A data-only alias of t: same storage and geometry, no autograd state.
Tensor data_alias(const Tensor& t) {
  Tensor alias = make_view(t, t.sizes(), t.strides(), t.storage_offset());
  impl_of(alias).is_view = impl_of(t).is_view;
  return alias;
}

}  // namespace

void Tape::append(const std::shared_ptr<Node>& node) {
  if (entries.size() >= compact_at) {
    std::erase_if(entries, [](const std::weak_ptr<Node>& w) { return w.expired(); });
    compact_at = std::max<size_t>(1024, 2 * entries.size());
  }
  entries.push_back(node);
}

Tape& this_thread_tape() { return tape; }
uint64_t take_sequence_number() { return next_sequence++; }
uint64_t upcoming_sequence_number() { return next_sequence.load(); }

// --- grad mode -------------------------------------------------------------------------------------

bool grad_mode_enabled() { return grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(grad_enabled) { grad_enabled = false; }
NoGradGuard::~NoGradGuard() { grad_enabled = previous_; }
EnableGradGuard::EnableGradGuard() : previous_(grad_enabled) { grad_enabled = true; }
EnableGradGuard::~EnableGradGuard() { grad_enabled = previous_; }

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
  if (anomaly_mode_enabled()) check_forward_anomaly(name, inputs, out, records);
  return records;
}

void append_entry(const char* name, const std::vector<Tensor>& inputs, Tensor& out,
                  const std::vector<Tensor>& saved, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->name = name;
  node->sequence = take_sequence_number();
  node->inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) node->inputs.push_back(edge_to(t));
  node->saved.reserve(saved.size());
  for (const Tensor& s : saved) {
    node->saved.push_back(SavedTensor{s.defined() ? data_alias(s) : Tensor(),
                                      s.defined() ? storage_of(s).version : 0});
  }
  node->backward = std::move(backward);
  node->autocast = autocast_dtype();
  attach(node, impl_of(out));
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
  this_thread_tape().append(node);
}

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

}  // namespace tg
