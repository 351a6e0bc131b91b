// autograd/tape.h — reverse-mode autograd as a tape.
//
// Every differentiable op that sees an input requiring grad appends one entry (a Node) to the
// thread's tape, in execution order: the op's name, edges to its inputs, its output's shape,
// the tensors it saved for backward, and its backward function. loss.backward() replays the
// tape in reverse from the loss's entry: each entry whose output received a gradient turns it
// into gradients for its inputs, which are summed into the entries that produced them (or into
// .grad of leaf tensors). Walked entries are then released, so the tape is empty after a
// training step.
//
// Ownership: an output tensor owns its entry (grad_fn); an entry owns the entries of its
// inputs (edges). The tape itself only holds weak references, in order, so a graph nobody
// can reach any more (say, an eval-mode forward) frees itself.
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

// Gradients returned by a backward function, one per input (undefined = no gradient).
using Grads = std::vector<Tensor>;

struct BackwardArgs {
  const Tensor& grad_out;                 // dL/d(output), shaped like the output
  const std::vector<Tensor>& saved;       // the tensors the op saved, in order
  const std::vector<bool>& needs_grad;    // per input: does anyone want its gradient?
};
using BackwardFn = std::function<Grads(const BackwardArgs&)>;

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

  std::string name;       // PyTorch's node name, e.g. "SoftmaxBackward0"
  uint64_t sequence = 0;  // position in execution order
  std::vector<Input> inputs;
  Shape out_sizes;
  ScalarType out_dtype = kFloat32;
  std::vector<SavedTensor> saved;
  BackwardFn backward;
  std::weak_ptr<TensorImpl> output;  // to fill .grad of a non-leaf that asked retain_grad()
  bool released = false;             // backward ran and freed what it kept
  Tensor pending_grad;               // gradient summed so far for the output, during backward

  // Bytes of distinct storages this entry keeps alive for backward.
  size_t saved_bytes() const;
};

// Append an entry for an op, if grad mode is on and some input requires grad; makes `out`
// require grad with this entry as its grad_fn. Also where anomaly mode checks each forward.
//   record("SoftmaxBackward0", {x}, y, {y}, [dim](const BackwardArgs& a) {
//     return Grads{softmax_backward(a.grad_out, a.saved[0], dim)};   // dx = y * (g - sum(g*y))
//   });
void record(const char* name, const std::vector<Tensor>& inputs, Tensor& out,
            const std::vector<Tensor>& saved, BackwardFn backward);
// True when an op with these inputs would be recorded (lets an op skip saving work).
bool should_record(const std::vector<Tensor>& inputs);

// Run backward from `root` with dL/droot = grad (see Tensor::backward).
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

}  // namespace tg
