// autograd/graph_dot.h — the graph backward would walk from a tensor, as Graphviz DOT text, to
// look at rather than read (as micrograd's draw_dot does):
//
//   std::ofstream("graph.dot") << tg::graph_dot(loss, {{"inputs", inputs}});
//   $ dot -Tsvg graph.dot > graph.svg
//
// Drawn top to bottom in the direction values flow: leaves (tensors that require grad and
// receive .grad) are blue boxes with their name and shape; each tape entry is a grey box with
// its PyTorch node name (MmBackward0, SoftmaxBackward0, ...), its input and output shapes and
// the bytes it keeps for backward (as tape_str counts them); the tensor itself is the green box
// at the bottom. An arrow runs from what made each input to the entry that used it. Inputs that
// need no gradient (a mask, a constant) are not drawn, but their shapes are listed.
//
// Node ids are numbered in execution order, so the same computation gives the same text.
// Drawing reads the graph and changes nothing: backward works the same afterwards.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace tg {

// Names for tensors, matched by identity (the same tensor, not an equal one): a leaf's box, or
// an intermediate result's entry, shows its name. The type of nn's NamedTensors, so a module's
// named_parameters() can be passed as it is. A tensor named twice keeps its first name.
using TensorNames = std::vector<std::pair<std::string, Tensor>>;

// Throws tg::Error when t does not require grad (there is no graph behind it).
std::string graph_dot(const Tensor& t, const TensorNames& names = {});

}  // namespace tg
