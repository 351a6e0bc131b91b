// autograd/ops/into_self.h — the arithmetic of add_ and mul_ (tensor.cpp), written straight into
// self's own buffer instead of into a new tensor that is then copied in. The copy would cost a
// temporary of self's size at the moment memory is fullest: backward sums each parameter's
// gradients with add_, and clipping scales them with mul_ (GPT-2's embedding gradient alone is
// 147 MiB). The values are add's and mul's (ops/arithmetic.cpp), from the same loops, which are
// only handed an output.
//
// It can be done when self is floating and contiguous, the result has self's dtype, and other
// does not share self's memory (an overlapping other would be overwritten while it is read).
// Otherwise add_ and mul_ compute apart and copy in, as any other in-place op does.
#pragma once
#include "autograd/tensor.h"

namespace tg {

bool can_write_into_self(const Tensor& self, const Tensor& other);
bool can_write_into_self(const Tensor& self, Scalar other);
void add_into_self(const Tensor& self, const Tensor& other, Scalar alpha);  // self = self + alpha * other
void mul_into_self(const Tensor& self, Scalar other);                       // self = self * other

}  // namespace tg
