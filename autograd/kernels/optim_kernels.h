// autograd/kernels/optim_kernels.h — the element loops of Adam's and AdamW's step and of the
// gradient 2-norm, compiled again for AVX2+FMA (eight floats a step) when the CPU has it.
//
// They speed up adam_step_reference (optim/adam.cpp) and sum_of_squares_reference
// (optim/clip_grad.cpp), their test oracles, declared in optim/optim_loops.h, and
// give the same bits: the same correctly rounded operations (fma, sqrt, +, *, /) in the same
// order. Only the compiled code differs: the references are compiled for baseline x86-64, where
// std::fma is a call into libm per element and nothing is vectorised.
//
// The AVX2+FMA copy runs an AdamW step about ten times as fast as the plain loop (measured in
// docs/performance.md).
//
// optim_kernels.cpp is built with -fno-math-errno (CMakeLists.txt): with errno to set, every
// sqrt is a branch and the loop does not vectorise. Nothing there reads errno.
#pragma once
#include <cstdint>

#include "autograd/kernels/isa.h"
#include "autograd/kernels/adam_step.h"  // AdamStep: what the plain loops (optim/optim_loops.h) take too

namespace tg::kernels {

// adam_step_reference on the copy compiled for `isa` (which must be available here).
template <class T>
void adam_step(T* p, const T* grad, T* m, T* v, T* v_max, int64_t n, const optim::AdamStep<T>& s,
               Isa isa = best_isa(Isa::kAvx2));

// sum_of_squares_reference on the copy compiled for `isa`.
template <class T>
T sum_of_squares(const T* x, int64_t n, Isa isa = best_isa(Isa::kAvx2));

}  // namespace tg::kernels
