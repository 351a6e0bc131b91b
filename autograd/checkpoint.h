// autograd/checkpoint.h — activation checkpointing: trade compute for memory.
//
//   y = tg::checkpoint([&](const Tensor& x) { return block->forward(x); }, x);
//
// is torch.utils.checkpoint.checkpoint(block, x) (the reentrant form): the same y, the same
// gradients, bit for bit, but the tape keeps only x for this piece of the graph.
//
//   forward   y = fn(x) under NoGradGuard: fn's ops record nothing, so every intermediate
//             tensor is freed as soon as fn is done with it. One tape entry
//             ("CheckpointFunctionBackward") saves x and the default generator's state.
//   backward  the entry runs fn(x) again, with grad mode on and the generator set back to the
//             state it had before the first run (so dropout draws the same masks), then
//             backpropagates dL/dy through that fresh graph: the parameters fn uses get their
//             gradients there (added to their .grad as usual), and the entry returns dL/dx.
//             The generator is then put back as it was, so nothing after notices the replay.
#pragma once
#include <functional>

#include "autograd/tensor.h"

namespace tg {

// y = fn(x), keeping only x on the tape for fn's piece of the graph (see the top of the file).
//
// Memory: the tape keeps x instead of everything fn's backward would need; while the entry's
// backward runs, fn's activations exist once more, for that piece alone. Compute: fn's forward
// runs twice.
//
// The rules, as PyTorch's:
//   * fn must compute the same thing both times: the same ops on the same tensors (the module it
//     calls must still exist when backward runs; a tensor it captures must not be written in place
//     in between), and random numbers from the default generator only (tg::dropout's);
//   * only x gets a gradient through the entry; parameters reached inside fn get theirs from the
//     replay. When grad mode is off, or x does not require grad, fn(x) simply runs as it is
//     (recorded if anything in it requires grad): nothing to save, no replay.
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& x);

}  // namespace tg
