// models/lora/llama_lora.h — LoRA adapters (nn/lora.h) on a LlamaForCausalLM (Llama, Qwen2, Qwen3),
// where peft puts them when target_modules names the projections:
//
//   target  layer i's Linears, each swapped for a LoRALinear    A, B (C hidden, hs head_dim, I intermediate)
//   attn    self_attn.q_proj                                     (r, C), (h*hs, r)
//           self_attn.k_proj, self_attn.v_proj                   (r, C), (kvh*hs, r)
//           self_attn.o_proj                                     (r, h*hs), (C, r)
//   mlp     mlp.gate_proj, mlp.up_proj                           (r, C), (I, r)
//           mlp.down_proj                                        (r, I), (C, r)
//
// The modules keep Hugging Face's names (models/llama.h), so an adapter's tensors are the
// module's name with ".lora." in it: model.layers.0.self_attn.q_proj.lora.lora_A.weight is peft's
// base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight (models/lora/lora_adapters.h).
//
// Read first: apply_lora, then merged_state_dict; what every model shares: models/lora/lora_config.h.
#pragma once
#include "models/llama.h"
#include "models/lora/lora_config.h"

namespace tg::models {

// Adds the adapters of the table at the top of this file layer by layer in that order, the order
// of the model's named_modules() in which peft walks it, each drawing its A from the default generator as peft
// does; then freezes every other weight (embeddings, norms, the head, biases). Qwen3-0.6B (C 1024,
// h 16, kvh 8, hs 128, I 3072, 28 layers) with r = 8 on attn and mlp adds 180,224 parameters a
// layer, 5,046,272 in all, to its 596,049,920 (0.85%). Throws tg::Error for a bad r or alpha, no
// target, or a model that has adapters already.
void apply_lora(LlamaForCausalLM& model, const LoRAConfig& config);

// The plain model's state_dict with every adapted W replaced by W + (alpha / r) B A
// (models/lora/lora_config.h), which Hugging Face's layout writes as it is; model is unchanged.
NamedTensors merged_state_dict(const LlamaForCausalLM& model);
// One tensor of it, made alone (lora_config.h: merged_lora_tensor).
Tensor merged_tensor(const LlamaForCausalLM& model, const std::string& name);

}  // namespace tg::models
