// autograd/print.cpp — printing a tensor in PyTorch's format (the formatting rules live in
// print_format.cpp; this file gathers the values and the suffixes PyTorch adds).
#include <ostream>

#include "autograd/loops.h"
#include "autograd/print_format.h"
#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tg {

namespace {

// The elements of t at the positions summary_sizes keeps (the first and last edgeitems of every
// cut dim), row-major, read in place through t's strides: a summarised tensor is never copied
// or visited whole, so an expanded 2^40-element tensor prints as fast as a small one.
template <class Out>
std::vector<Out> edge_values(const Tensor& t, const print::PrintOptions& options) {
  const Shape kept = print::summary_sizes(t.sizes(), options);
  std::vector<Out> out;
  out.reserve(static_cast<size_t>(shape_numel(kept)));
  const auto read = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = t.data_ptr<T>();
    // entry i of dim d (i < kept[d]) is position i, or for the tail of a cut dim, size - kept + i
    const auto position = [&](int64_t d, int64_t i) {
      const int64_t size = t.sizes()[d];
      return kept[d] == size || i < kept[d] / 2 ? i : size - kept[d] + i;
    };
    Shape index(kept.size(), 0);
    while (true) {
      int64_t offset = 0;
      for (size_t d = 0; d < kept.size(); ++d) offset += position(static_cast<int64_t>(d), index[d]) * t.strides()[d];
      out.push_back(static_cast<Out>(base[offset]));
      int64_t d = static_cast<int64_t>(kept.size()) - 1;
      for (; d >= 0 && ++index[d] == kept[d]; --d) index[d] = 0;
      if (d < 0) break;
    }
  };
  if (t.dtype() == kFloat16) read(TypeTag<Float16>{});  // a checkpoint's float16 weight: shown widened
  else visit_dtype(t.dtype(), read);
  return out;
}

}  // namespace

std::string repr(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const print::PrintOptions options;  // PyTorch's defaults
  print::Values v;
  v.sizes = t.sizes();
  v.edges_only = t.numel() > options.threshold;
  if (t.dtype() == kFloat16) {  // storage only: its values read where they lie, widened exactly
    v.kind = print::Kind::Floating;
    v.floats = v.edges_only ? edge_values<double>(t, options) : t.to(kFloat32).tolist<double>();
  } else if (t.is_floating_point()) {
    v.kind = print::Kind::Floating;
    v.floats = v.edges_only ? edge_values<double>(t, options) : t.tolist<double>();
  } else {
    v.kind = t.dtype() == kBool ? print::Kind::Bool : print::Kind::Integer;
    v.ints = v.edges_only ? edge_values<int64_t>(t, options) : t.tolist<int64_t>();
  }
  std::vector<std::string> suffixes;
  const std::string dtype = std::string("torch.") + dtype_name(t.dtype());
  if (print::shows_dtype(dtype, t.numel() == 0)) suffixes.push_back("dtype=" + dtype);
  if (t.grad_fn()) {
    suffixes.push_back("grad_fn=<" + t.grad_fn()->name + ">");
  } else if (t.requires_grad()) {
    suffixes.emplace_back("requires_grad=True");  // (push_back: a false -Warray-bounds from GCC 12 at -O3)
  }
  return print::format_repr(v, suffixes, options);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << repr(t); }

}  // namespace tg
