// optim/clip_grad.h — clip_grad_norm_, as torch.nn.utils.clip_grad_norm_ (torch 1.13), and grad_norm.
//
// The total norm is the p-norm of all gradients together, as if concatenated into one vector:
//   total = || (||g_1||_p, ||g_2||_p, ...) ||_p        (p = inf: the largest |g|)
//   coef  = min(max_norm / (total + 1e-6), 1)
//   g     = g * coef                                   for every gradient, in place
// Parameters without a gradient are skipped; with none at all the result is 0. A non-finite total
// is an error when error_if_nonfinite, else the gradients are scaled by it anyway (as PyTorch does
// with the default error_if_nonfinite = false). All arithmetic is in the gradients' dtype.
//
// It lives in tg::optim (PyTorch keeps it in torch.nn.utils) because it is part of a training
// step: loss.backward(); tg::optim::clip_grad_norm_(model.parameters(), 1.0); opt.step();
#pragma once
#include <vector>

#include "autograd/tensor.h"

namespace tg::optim {

// Returns the total norm as a 0-d tensor of the gradients' dtype.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// The same total norm without touching the gradients (to watch it, or to check it is finite
// before a step). A 0-d tensor of the gradients' dtype; 0 when no parameter has a gradient.
Tensor grad_norm(const std::vector<Tensor>& params, double norm_type = 2.0);

}  // namespace tg::optim
