// autograd/print.cpp — printing a tensor in PyTorch's format (the formatting rules live in
// print_format.cpp; this file gathers the values and the suffixes PyTorch adds).
#include <ostream>

#include "autograd/print_format.h"
#include "autograd/tape.h"
#include "autograd/tensor.h"

namespace tg {

std::string repr(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  print::Values v;
  v.sizes = t.sizes();
  if (t.is_floating_point()) {
    v.kind = print::Kind::Floating;
    v.floats = t.tolist<double>();
  } else {
    v.kind = t.dtype() == kBool ? print::Kind::Bool : print::Kind::Integer;
    v.ints = t.tolist<int64_t>();
  }
  std::vector<std::string> suffixes;
  const std::string dtype = std::string("torch.") + dtype_name(t.dtype());
  if (print::shows_dtype(dtype, t.numel() == 0)) suffixes.push_back("dtype=" + dtype);
  if (t.grad_fn()) {
    suffixes.push_back("grad_fn=<" + t.grad_fn()->name + ">");
  } else if (t.requires_grad()) {
    suffixes.push_back("requires_grad=True");
  }
  return print::format_repr(v, suffixes);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << repr(t); }

}  // namespace tg
