// autograd/tape.h — reverse-mode autograd as a tape.
//
// Every differentiable op that sees an input requiring grad appends one entry (a Node) to the
// thread's tape, in execution order: the op's name, edges to its inputs, its output's shape,
// the tensors it saved for backward, and its backward function. loss.backward() replays the
// tape in reverse, from the loss's entry, over the entries the loss depends on: each entry
// turns the gradient of its output into gradients for its inputs, which are summed into the
// entries that produced them (or into .grad of leaf tensors). Walked entries are then
// released, so the tape is empty after a training step.
//
// This header is what a user of the tape sees: grad mode, anomaly mode, and the tape for
// reading. How an op records itself (record, begin_inplace, ...) is autograd/record.h.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace tg {

// A tensor kept for backward: a data-only alias (no grad_fn, so no cycle through the entry)
// and the storage version when it was saved, to catch in-place changes made afterwards.
struct SavedTensor {
  Tensor data;
  uint64_t version = 0;
};

class Node;

// What a backward function sees of the tensors its op saved. saved[i] checks, when read, that
// the tensor was not modified in place since it was saved, and throws if it was: this is the
// only way a backward reads a tensor (a backward lambda captures plain values only: dims,
// shapes, scalars; never a Tensor, which would skip the check).
class SavedTensors {
 public:
  explicit SavedTensors(const Node& node) : node_(node) {}
  const Tensor& operator[](size_t i) const;
  size_t size() const;

 private:
  const Node& node_;
};

// Gradients returned by a backward function, one per input (undefined = no gradient).
using Grads = std::vector<Tensor>;

struct BackwardArgs {
  const Tensor& grad_out;                 // dL/d(output), shaped like the output
  const SavedTensors& saved;              // the tensors the op saved, in order: saved[i]
  const std::vector<bool>& needs_grad;    // per input: does anyone want its gradient?
};
using BackwardFn = std::function<Grads(const BackwardArgs&)>;

// One entry of the tape. Ownership: an output tensor owns its entry (grad_fn); an entry owns the
// entries of its inputs (edges). The tape itself only holds weak references, in order, so a graph
// nobody can reach any more (say, an eval-mode forward) frees itself.
class Node {
 public:
  // One edge per op input: where its gradient goes.
  struct Input {
    std::shared_ptr<Node> producer;     // the entry that made the input (null for leaves)
    std::shared_ptr<TensorImpl> leaf;   // a leaf requiring grad: gradient accumulates here
    Shape sizes;                        // the input's shape: its gradient is summed down to it
    ScalarType dtype = kFloat32;
    bool needs_grad = false;
  };

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the chain of producers iteratively: a graph of a million entries is freed
  // without a million nested destructor calls (which would overflow the stack).
  ~Node();

  std::string name;       // PyTorch's node name, e.g. "SoftmaxBackward0"
  uint64_t sequence = 0;  // position in execution order (one counter for all threads)
  std::vector<Input> inputs;
  Shape out_sizes;
  ScalarType out_dtype = kFloat32;
  ScalarType autocast = kFloat32;  // the forward's autocast mode (autocast.h): backward runs in it too
  std::vector<SavedTensor> saved;
  BackwardFn backward;
  std::weak_ptr<TensorImpl> output;  // to fill .grad of a non-leaf that asked retain_grad()
  bool released = false;             // backward ran and freed what it kept
  Tensor pending_grad;               // gradient summed so far for the output, during backward
  uint64_t queued_in = 0;            // the backward pass that last queued this entry

  // Bytes of distinct storages this entry keeps alive for backward.
  size_t saved_bytes() const;
};

// Run backward from `root` with dL/droot = grad (see Tensor::backward). The entries the root
// depends on are run in reverse execution order.
//
// Threads: each thread records onto its own tape, and grad mode and anomaly mode are per
// thread. Execution order is one counter for the whole process, and backward follows the
// edges from the root, so a graph may be backpropagated from any thread — but one graph must
// not be used by two threads at the same time.
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);

// --- grad mode ---------------------------------------------------------------------------------
bool grad_mode_enabled();
// While alive, ops record nothing (as torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
// While alive, ops record again, even inside a NoGradGuard (as torch.enable_grad()): a backward
// function that must build a graph of its own (autograd/checkpoint.h) uses it.
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

// --- anomaly mode ------------------------------------------------------------------------------
// While alive (or with TG_DETECT_ANOMALY=1 in the environment), the first op whose forward
// output holds a NaN, or whose backward produces a NaN or Inf gradient, throws an Error that
// names the op, its tape entry, the direction, and statistics of its inputs.
bool anomaly_mode_enabled();
class AnomalyModeGuard {
 public:
  explicit AnomalyModeGuard(bool enabled = true);
  ~AnomalyModeGuard();
  AnomalyModeGuard(const AnomalyModeGuard&) = delete;
  AnomalyModeGuard& operator=(const AnomalyModeGuard&) = delete;

 private:
  bool previous_;
};

// --- the tape, for reading ---------------------------------------------------------------------
// The live entries of this thread's tape, oldest first.
std::vector<std::shared_ptr<Node>> tape_entries();
size_t tape_size();
// One line per entry: op, input and output shapes, bytes kept for backward; then the total.
std::string tape_str();
void print_tape(std::ostream& os);
// Bytes of the distinct storages these entries keep for backward (a storage two entries keep
// counts once): the "total kept for backward" of tape_str.
size_t saved_bytes(const std::vector<std::shared_ptr<Node>>& entries);
// A byte count as tape_str writes it: "144 B", "2.5 KiB", "3.0 MiB".
std::string human_bytes(size_t bytes);

}  // namespace tg
