// autograd/record.h — how an op puts itself on the tape: the op author's API.
//
// An op computes its output, then calls record once with what its backward needs; an in-place
// op brackets its write with begin_inplace and finish_inplace. Everything else about the tape
// (grad mode, anomaly mode, reading the tape) is autograd/tape.h, which this header includes.
#pragma once
#include <utility>
#include <vector>

#include "autograd/tape.h"

namespace tg {

// Every op calls record exactly once, after computing its output, whether or not anything
// needs a gradient. softmax's, from softmax_op (ops/softmax.cpp):
//   record("SoftmaxBackward0", {x}, y, {y}, [dim, log_space](const BackwardArgs& ctx) {
//     return Grads{softmax_grad(ctx.grad_out, ctx.saved[0], dim, log_space)};  // dx = y * (g - sum(g*y))
//   });
// It runs anomaly mode's forward check (when on), then, if grad mode is on and some input
// requires grad, appends an entry: `out` then requires grad with the entry as its grad_fn.
// Otherwise it returns at once, before the backward function is even wrapped. An op whose
// saved tensors cost work to make guards that work with should_record(inputs).
bool begin_record(const char* name, const std::vector<Tensor>& inputs, const Tensor& out);
void append_entry(const char* name, const std::vector<Tensor>& inputs, Tensor& out,
                  const std::vector<Tensor>& saved, BackwardFn backward);
template <class F>
void record(const char* name, const std::vector<Tensor>& inputs, Tensor& out, const std::vector<Tensor>& saved,
            F&& backward) {
  if (begin_record(name, inputs, out)) append_entry(name, inputs, out, saved, BackwardFn(std::forward<F>(backward)));
}
// True when an op with these inputs would be recorded (lets an op skip saving work).
bool should_record(const std::vector<Tensor>& inputs);

// --- in-place writes: the one way an in-place op records itself ---------------------------------
// Before writing into self (an op whose new value depends on `others`):
//   Tensor old = begin_inplace(*this, {other}, "mul_");
// refuses what cannot be written (a leaf that requires grad; a view of a tensor in autograd;
// a tensor whose elements share memory) and returns a handle to self's history as it was.
// After the write:
//   finish_inplace(*this, old, {other}, "MulBackward0", {other, old_value}, backward);
// marks self written (mark_written) and records the entry (inputs: old history, then others),
// which becomes self's new history. Views taken of self earlier follow it (see Tensor's views).
Tensor begin_inplace(const Tensor& self, const std::vector<Tensor>& others, const char* op);
void finish_inplace(Tensor& self, const Tensor& old_history, const std::vector<Tensor>& others,
                    const char* name, const std::vector<Tensor>& saved, BackwardFn backward);

// --- the version counter -------------------------------------------------------------------------
// Bumps the version of t's storage: every tape entry that saved a tensor of that storage then
// refuses to run backward with the changed values. The one place a version changes:
// finish_inplace calls it, and so does a write that is not an op (an optimizer step, a module's
// dtype conversion). A tensor an op has just made and is still filling needs none (nobody can
// have saved it): fill it with copy_values (autograd/internal.h), not with copy_.
void mark_written(const Tensor& t);

}  // namespace tg
