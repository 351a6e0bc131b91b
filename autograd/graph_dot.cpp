// autograd/graph_dot.cpp — walk the entries t depends on (the ones backward would run), number
// them in execution order, and write one DOT node per entry and per leaf.
#include "autograd/graph_dot.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "autograd/internal.h"
#include "autograd/tape.h"

namespace tg {

namespace {

// A DOT string literal: quotes and backslashes escaped, a newline in a name kept as one.
std::string dot_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

// The label's lines joined by DOT's centred line break.
std::string lines(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "\n") + p;
  return dot_quoted(out);
}

std::string shape_and_dtype(const Shape& sizes, ScalarType dtype) {
  return shape_str(sizes) + (dtype == kFloat32 ? "" : std::string(" ") + dtype_name(dtype));
}

// Every entry the root's entry reaches through its inputs, oldest first.
std::vector<std::shared_ptr<Node>> entries_behind(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> found{root}, todo{root};
  std::map<const Node*, bool> seen{{root.get(), true}};
  while (!todo.empty()) {
    std::shared_ptr<Node> n = todo.back();
    todo.pop_back();
    for (const Node::Input& in : n->inputs) {
      if (in.producer && seen.emplace(in.producer.get(), true).second) {
        found.push_back(in.producer);
        todo.push_back(in.producer);
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a->sequence < b->sequence; });
  return found;
}

}  // namespace

std::string graph_dot(const Tensor& t, const TensorNames& names) {
  if (!t.defined() || !t.requires_grad()) {
    throw Error("graph_dot: the tensor does not require grad, so there is no graph behind it (was it made under "
                "NoGradGuard, or from tensors that do not require grad?)");
  }
  std::map<const TensorImpl*, std::string> leaf_names;
  std::map<const Node*, std::string> result_names;
  for (const auto& [name, tensor] : names) {
    if (!tensor.defined()) continue;
    if (tensor.requires_grad() && !tensor.is_leaf()) result_names.emplace(tensor.grad_fn().get(), name);
    else leaf_names.emplace(impl_ptr_of(tensor).get(), name);
  }
  auto name_of_leaf = [&](const TensorImpl* leaf) {
    const auto it = leaf_names.find(leaf);
    return it == leaf_names.end() ? std::string() : it->second;
  };

  std::ostringstream os;
  os << "digraph tapegrad {\n"
     << "  node [fontname=\"Helvetica\", fontsize=11, shape=box];\n"
     << "  edge [color=\"#555555\"];\n";
  const std::string output_label = [&] {
    const auto it = result_names.find(t.grad_fn().get());
    std::string name = t.is_leaf() ? name_of_leaf(impl_ptr_of(t).get()) : (it == result_names.end() ? "" : it->second);
    return lines({name.empty() ? "output" : name, shape_and_dtype(t.sizes(), t.dtype())});
  }();

  if (t.is_leaf()) {  // nothing was computed: the graph is the leaf itself
    os << "  output [label=" << output_label << ", style=filled, fillcolor=\"#d5f5d5\"];\n}\n";
    return os.str();
  }

  // Entries in execution order: op0 is the oldest. Leaves are numbered as entries first use them.
  const std::vector<std::shared_ptr<Node>> entries = entries_behind(t.grad_fn());
  std::map<const Node*, size_t> op_id;
  for (size_t i = 0; i < entries.size(); ++i) op_id[entries[i].get()] = i;
  std::map<const TensorImpl*, size_t> leaf_id;
  std::ostringstream leaves, ops, edges;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Node& n = *entries[i];
    std::string ins;
    for (const Node::Input& in : n.inputs) {
      ins += (ins.empty() ? "in " : " ") + shape_str(in.sizes);
      std::string from;
      if (in.producer) {
        from = "op" + std::to_string(op_id.at(in.producer.get()));
      } else if (in.leaf) {
        auto [it, fresh] = leaf_id.emplace(in.leaf.get(), leaf_id.size());
        from = "leaf" + std::to_string(it->second);
        if (fresh) {
          const std::string name = name_of_leaf(in.leaf.get());
          leaves << "  " << from << " [label="
                 << lines({name.empty() ? "leaf" : name, shape_and_dtype(in.leaf->sizes, in.leaf->dtype)})
                 << ", style=filled, fillcolor=\"#cfe8fc\"];\n";
        }
      }
      if (!from.empty()) edges << "  " << from << " -> op" << i << ";\n";
    }
    std::vector<std::string> label{n.name};
    const bool is_root = i + 1 == entries.size();  // its name is on the output's box
    if (const auto it = result_names.find(&n); it != result_names.end() && !is_root) label.push_back("= " + it->second);
    label.push_back(ins.empty() ? "no inputs" : ins);
    label.push_back("out " + shape_and_dtype(n.out_sizes, n.out_dtype));
    label.push_back("keeps " + human_bytes(n.saved_bytes()) + (n.released ? " (released by backward)" : ""));
    ops << "  op" << i << " [label=" << lines(label) << ", style=\"rounded,filled\", fillcolor=\"#eeeeee\"];\n";
  }
  edges << "  op" << entries.size() - 1 << " -> output;\n";

  os << leaves.str() << ops.str() << "  output [label=" << output_label
     << ", style=filled, fillcolor=\"#d5f5d5\"];\n"
     << edges.str() << "  label=" << dot_quoted("total kept for backward: " + human_bytes(saved_bytes(entries)))
     << ";\n  labelloc=b;\n  fontname=\"Helvetica\";\n  fontsize=11;\n}\n";
  return os.str();
}

}  // namespace tg
