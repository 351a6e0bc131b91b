// nn/lora.h — LoRA, low-rank adaptation (Hu et al. 2021), as PyTorch's peft adds it to a layer:
// the layer's weight W stays frozen, and a trained low-rank update is added to its output.
//
//   LoRALinear(base, r, alpha)   y = x W^T + b + (alpha / r) · (x A^T) B^T
//       weight (out, in), bias (out)   base's own tensors (the same ones), frozen: requires_grad false
//       lora.lora_A.weight (r, in)     A, trained
//       lora.lora_B.weight (out, r)    B, trained
//   LoRA(in, out, r, alpha)      the update alone, (alpha / r) · (x A^T) B^T: for an adapter on
//                                outputs that are not one Linear's (models/lora/gpt_lora.h: GPT-2's fused q, k, v)
//
// Memory: A and B have r · (in + out) numbers against W's in · out, and an optimizer given
// trainable_parameters() (nn/module.h) keeps state for them alone. Read LoRALinear's constructor
// and forward in nn/lora.cpp first.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nn/layers.h"
#include "nn/module.h"

namespace tg::nn {

// Whether alpha / r, the update's scale, is at most float32's largest value (the adapters' dtype):
// alpha = 1e308 is a finite double, but its scale would be inf in every float32 product and merge.
bool lora_scale_fits_float32(int64_t r, double alpha);

class LoRA : public Module {
 public:
  // r >= 1; alpha > 0, with alpha / r a float32 (lora_scale_fits_float32). Throws tg::Error naming
  // the bad argument.
  //
  // A and B are peft's lora_A and lora_B, nn.Linear(in, r, bias=False) and nn.Linear(r, out,
  // bias=False), initialised as peft's LoraLayer.update_layer does it, drawing the same random
  // numbers in the same order (so the same seed gives peft's A):
  //   lora_A = Linear(in, r, bias=false)      a kaiming-uniform draw of A (nn.Linear's own init)
  //   lora_B = Linear(r, out, bias=false)     a draw of B (thrown away below)
  //   kaiming_uniform_(A, a = sqrt(5))        A drawn again: U(-1/sqrt(in), 1/sqrt(in))
  //   B = 0                                   so at the start y is the base layer's output exactly
  LoRA(int64_t in_features, int64_t out_features, int64_t r, double alpha);
  // x (..., in) -> (alpha / r) · (x A^T) B^T (..., out). Only A and B get gradients:
  // dA = scale · B^T g^T x summed over rows, dB = scale · g^T (x A^T); the autograd ops of the two
  // Linears and the product by the scale give them (nn/ builds modules from autograd ops only).
  Tensor forward(const Tensor& x) override;
  // (alpha / r) · B A, (out, in), computed without the tape
  Tensor delta_weight() const;
  std::string extra_repr() const override;
  int64_t r;
  double alpha, scaling;  // scaling = alpha / r
  std::shared_ptr<Linear> lora_A, lora_B;
};

class LoRALinear : public Linear {
 public:
  // Adapts base: takes its weight and bias (the same tensors, now frozen) and adds LoRA(in, out,
  // r, alpha). The caller puts it where base was (Module::replace_module).
  LoRALinear(const Linear& base, int64_t r, double alpha);
  Tensor forward(const Tensor& x) override;  // x W^T + b + lora(x)
  // W + (alpha / r) · B A (delta_weight()): a plain Linear with this weight (and bias) gives the
  // same outputs, to float rounding
  Tensor merged_weight() const;
  std::string extra_repr() const override;
  std::shared_ptr<LoRA> lora;
};

}  // namespace tg::nn
