// autograd/tape_internal.h — what the files of the tape share with one another, and nothing else
// includes. The tape is five files, one concern each:
//
//   tape.cpp          the thread's tape, grad mode, recording an entry, reading a saved tensor
//   tape_inplace.cpp  in-place writes: the version counter, and views that follow their base
//   tape_backward.cpp the backward engine: replaying the entries in reverse
//   tape_anomaly.cpp  anomaly mode: the forward NaN and backward NaN/Inf checks
//   tape_reading.cpp  the tape for reading: its entries, tape_str, the bytes kept for backward
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/internal.h"
#include "autograd/record.h"

namespace tg {

// The thread's tape: weak references to entries, in execution order.
struct Tape {
  std::vector<std::weak_ptr<Node>> entries;
  size_t compact_at = 1024;  // drop expired references when the tape grows past this

  void append(const std::shared_ptr<Node>& node);
};
Tape& this_thread_tape();

// Execution order, one counter for all threads: an entry's inputs always have smaller numbers.
// take_sequence_number hands out the next one; upcoming_sequence_number only looks at it.
uint64_t take_sequence_number();
uint64_t upcoming_sequence_number();

// The edge from an entry to one of its inputs.
Node::Input edge_to(const Tensor& t);
// Make `node` the history of `out` and put it on this thread's tape.
void attach(const std::shared_ptr<Node>& node, TensorImpl& out);

// Anomaly mode's checks (tape_anomaly.cpp), run when anomaly_mode_enabled(). The forward check
// throws when `out` holds a NaN (-inf is legitimate: masks use it); `recorded` says whether the
// op is about to get a tape entry. The backward check throws when the gradient an entry gives
// its input `input` holds a NaN or an Inf.
void check_forward_anomaly(const char* name, const std::vector<Tensor>& inputs, const Tensor& out, bool recorded);
void check_backward_anomaly(const Node& node, size_t input, const Tensor& grad, const Tensor& grad_out);

}  // namespace tg
