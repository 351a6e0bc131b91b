// nn/gradcheck.h — gradient-check a whole module: its parameters and its inputs, in float64.
//
//   tg::nn::Linear fc(3, 2);
//   tg::Tensor x = tg::randn({4, 3}).requires_grad_();
//   std::cout << tg::nn::gradcheck(fc, {x});   // w.r.t. fc.weight, fc.bias and x
//
// It is tg::gradcheck (autograd/gradcheck.h) applied to a module: read that first, then
// nn/gradcheck.cpp.
#pragma once
#include <vector>

#include "autograd/gradcheck.h"
#include "nn/module.h"

namespace tg::nn {

// What is checked: every parameter of the module that requires grad (trainable_parameters(), by
// their dotted names; a frozen one is a constant of the function) and every input that requires
// grad, as tg::gradcheck (autograd/gradcheck.h) checks a function: central differences in
// float64 against one backward per output element.
//
// Float64: for the check the module is converted to float64 in place (Module::to), and
// afterwards converted back, which restores float32 parameters bit for bit (float32 -> float64
// -> float32 is exact). Floating inputs are checked as float64 copies, so a float32 input is
// fine. The module's parameters and floating buffers must share one dtype (else tg::Error).
// The parameters' .grad from before the check is put back afterwards, untouched.
//
// forward: how to call the module on the inputs (they arrive as the float64 copies). Without
// one, the module's forward(inputs[0]) is called, and exactly one input must be given. With
// several inputs or options, pass a lambda:
//   tg::nn::gradcheck(mha, {x, kv}, [&](const std::vector<tg::Tensor>& in) {
//     return mha.forward(in[0], {.kv = in[1], .causal = false});
//   });
//
// Dropout in training: the default generator is replayed, so every evaluation (each perturbed
// one and the one backward goes through) draws the same mask; the generator ends where it
// started. The module's train/eval mode is left as it is.
GradcheckResult gradcheck(Module& module, const std::vector<Tensor>& inputs, const GradcheckFn& forward = {},
                          GradcheckOptions options = {});
GradcheckResult gradcheck(Module& module, const std::vector<Tensor>& inputs, GradcheckOptions options);

// For tests: throw a tg::Error whose message is the report if the check fails.
void assert_gradcheck(Module& module, const std::vector<Tensor>& inputs, const GradcheckFn& forward = {},
                      GradcheckOptions options = {});

}  // namespace tg::nn
