// nn/lora.cpp — the LoRA update and a Linear with one (the formulas are in nn/lora.h).
#include "nn/lora.h"

#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/init.h"

namespace tg::nn {

bool lora_scale_fits_float32(int64_t r, double alpha) {
  return r >= 1 && alpha > 0.0 && alpha / static_cast<double>(r) <= std::numeric_limits<float>::max();
}

LoRA::LoRA(int64_t in_features, int64_t out_features, int64_t rank, double lora_alpha)
    : Module("LoRA"), r(rank), alpha(lora_alpha) {
  if (r < 1) throw Error("LoRA: the rank r must be at least 1, got " + std::to_string(r));
  if (!(alpha > 0.0) || !std::isfinite(alpha)) throw Error("LoRA: alpha must be positive, got " + python_float(alpha));
  scaling = alpha / static_cast<double>(r);
  if (!lora_scale_fits_float32(r, alpha))
    throw Error("LoRA: the scale alpha / r = " + python_float(scaling) + " is beyond float32's range");
  // peft's draws, in its order (see the header): A, B, then A again; B zeroed
  lora_A = register_module("lora_A", std::make_shared<Linear>(in_features, r, /*bias=*/false));
  lora_B = register_module("lora_B", std::make_shared<Linear>(r, out_features, /*bias=*/false));
  init::kaiming_uniform_(lora_A->weight, std::sqrt(5.0));
  NoGradGuard no_grad;
  lora_B->weight.zero_();
}

Tensor LoRA::forward(const Tensor& x) {
  const Tensor down = lora_A->forward(x);  // x A^T: (..., r)
  const Tensor up = lora_B->forward(down);  // (x A^T) B^T: (..., out)
  // · alpha / r, peft's order. With alpha = r (the default) that is · 1, which changes no bit, so
  // the pass over the (..., out) output, and its backward, are left out.
  return scaling == 1.0 ? up : up * scaling;
}

Tensor LoRA::delta_weight() const {
  NoGradGuard no_grad;
  return lora_B->weight.matmul(lora_A->weight) * scaling;  // (out, r) @ (r, in), then · alpha / r
}

std::string LoRA::extra_repr() const {
  return "r=" + std::to_string(r) + ", alpha=" + python_float(alpha) + ", scaling=" + python_float(scaling);
}

LoRALinear::LoRALinear(const Linear& base, int64_t r, double alpha)
    : Linear("LoRALinear", base.weight, base.bias) {
  auto update = std::make_shared<LoRA>(in_features, out_features, r, alpha);  // checks r and alpha first
  weight.requires_grad_(false);  // frozen: no gradient, no optimizer state
  if (bias.defined()) bias.requires_grad_(false);
  lora = register_module("lora", update);
}

Tensor LoRALinear::forward(const Tensor& x) {
  const Tensor base = Linear::forward(x);  // x W^T + b (checks x's last dim)
  return base + lora->forward(x);         // + (alpha / r) · (x A^T) B^T
}

Tensor LoRALinear::merged_weight() const {
  NoGradGuard no_grad;
  // a float16 base (a checkpoint's, kept 16-bit) is widened first: float16 is storage only; a
  // bfloat16 one widens in the sum itself. The merged weight is float32 either way.
  return (weight.dtype() == kFloat16 ? weight.to(kFloat32) : weight) + lora->delta_weight();
}

std::string LoRALinear::extra_repr() const { return Linear::extra_repr() + ", frozen"; }

}  // namespace tg::nn
