// autograd/checkpoint.cpp — activation checkpointing (the header explains the idea).
#include "autograd/checkpoint.h"

#include <utility>

#include "autograd/internal.h"
#include "autograd/random/generator.h"
#include "autograd/record.h"

namespace tg {

namespace {

// Sets the default generator to `replayed` while alive, and back to what it was after (also when
// fn throws): the replay draws the first run's random numbers and leaves no trace.
class ReplayGenerator {
 public:
  explicit ReplayGenerator(const Generator& replayed) : current_(default_generator()) {
    default_generator() = replayed;
  }
  ~ReplayGenerator() { default_generator() = current_; }
  ReplayGenerator(const ReplayGenerator&) = delete;
  ReplayGenerator& operator=(const ReplayGenerator&) = delete;

 private:
  Generator current_;
};

}  // namespace

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& x) {
  if (!grad_mode_enabled() || !x.defined() || !x.requires_grad()) return fn(x);
  const Generator before = default_generator();  // the state the replay starts from
  Tensor y;
  {
    NoGradGuard no_grad;  // nothing of fn is kept
    y = fn(x);
  }
  // fn gave back x itself or a view of it: there is nothing to free, and the entry would become
  // x's history. Run it again, from the same random state, as an ordinary recorded function.
  if (y.defined() && &storage_of(y) == &storage_of(x)) {
    default_generator() = before;
    return fn(x);
  }
  record("CheckpointFunctionBackward", {x}, y, {x}, [fn, before](const BackwardArgs& ctx) {
    Tensor input = ctx.saved[0].detach();  // x again, as a leaf of the replayed graph
    input.requires_grad_(true);
    Tensor replayed;
    {
      EnableGradGuard grad_on;  // backward runs with recording off; the replay must record
      ReplayGenerator same_draws(before);
      replayed = fn(input);
    }
    if (!replayed.requires_grad()) return Grads{Tensor()};  // y did not depend on x or on parameters
    run_backward(replayed, ctx.grad_out, /*retain_graph=*/false);  // parameters' .grad filled here
    return Grads{input.grad()};  // dL/dx (undefined if y does not depend on x)
  });
  return y;
}

}  // namespace tg
