// models/lora/lora_config.h — which LoRA adapters a run asks for (the rank, the scale, the targets),
// and what adding them means for any model, whichever family's table (models/lora/gpt_lora.h for
// GPT-2, models/lora/llama_lora.h for Llama / Qwen) says where they go:
//   - an adapter is a LoRALinear swapped in for a Linear (nn/lora.h), or GPT-2's fused q, k, v
//     update; its tensors are the state_dict names with ".lora." (or ".qkv_lora.") in them;
//   - only the adapters train: every other parameter is frozen (requires_grad false);
//   - merging: each adapted weight W becomes W + (alpha / r) B A, the adapters' own tensors are
//     left out, and what remains is the plain model's state_dict.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "autograd/tensor.h"
#include "nn/module.h"

namespace tg::models {

struct LoRAConfig {
  int64_t r = 8;       // the rank, >= 1
  double alpha = 8.0;  // the update is scaled by alpha / r
  bool attn = true;    // adapters on the attention's projections (q, k, v and the output)
  bool mlp = false;    // adapters on the feed-forward's Linears
};

// "attn", "mlp", "attn,mlp" (either order) -> which targets; anything else is a tg::Error naming it.
void parse_lora_targets(const std::string& text, LoRAConfig& config);
// The targets as text: "attn", "mlp" or "attn,mlp".
std::string lora_targets(const LoRAConfig& config);

// A state_dict name of an adapter's tensor: "...q_proj.lora.lora_A.weight", "...att.qkv_lora.lora_B.weight".
bool is_adapter_name(const std::string& name);

// True when model has adapters.
bool has_lora(const nn::Module& model);

// Freezes every parameter of model but the adapters'.
void train_adapters_only(nn::Module& model);

// One tensor of the merged model: model's state_dict entry `name` (not an adapter's), merged when
// it is a LoRALinear's weight (W + (alpha / r) B A); computed without the tape, model unchanged.
// Made one at a time as a file reaches them (train_gpt --merge-lora: models/hf/hf_llama.h's
// WeightMaker), the merged weights are never all in memory at once. An unknown name is an Error.
Tensor merged_lora_tensor(const nn::Module& model, const std::string& name);

}  // namespace tg::models
