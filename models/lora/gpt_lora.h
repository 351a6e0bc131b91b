// models/lora/gpt_lora.h — LoRA adapters (nn/lora.h) on a GPTModel, where peft puts them on GPT-2, and
// the model's weights with the adapters merged in.
//
//   target  tapegrad's layers, in block i                  GPT-2's (peft's names)   A, B (C = emb_dim)
//   attn    att.W_query, W_key, W_value together:           attn.c_attn             (r, C), (3C, r)
//             att.qkv_lora (CausalSelfAttention::add_qkv_lora, models/gpt.h)
//           att.out_proj -> LoRALinear                      attn.c_proj             (r, C), (C, r)
//   mlp     ff.layers.0 -> LoRALinear, by name              mlp.c_fc                (r, C), (4C, r)
//           ff.layers.2 -> LoRALinear, by name              mlp.c_proj              (r, 4C), (C, r)
//
// Read first: apply_lora (the order, the freezing), then merged_state_dict. LoRAConfig, the
// targets' names and the freezing and merging common to every model: models/lora/lora_config.h.
#pragma once
#include "models/gpt.h"
#include "models/lora/lora_config.h"

namespace tg::models {

// Adds the adapters of the table at the top of this file block by block in that order, the order in
// which peft walks GPT-2's modules, each drawing its A from the default generator as peft does; then freezes every
// other parameter (embeddings, LayerNorms, the head, Linears without an adapter), so that only the
// adapters require grad (trainable_parameters, nn/module.h). For GPT-2 124M (C = 768, 12 blocks),
// r = 8 on attn and mlp adds 98,304 parameters a block, 1,179,648 in all, against the model's
// 124,439,808. Throws tg::Error for a bad r or alpha, no target, or a model that has adapters
// already.
void apply_lora(GPTModel& model, const LoRAConfig& config);

// The state_dict of a plain GPTModel of the same config that computes what the adapted one does:
// every adapted weight W replaced by W + (alpha / r) B A (for attn, the rows [0, C), [C, 2C),
// [2C, 3C) of the fused update go to W_query, W_key, W_value); the adapters' own tensors are left
// out. Computed without the tape; model is unchanged.
NamedTensors merged_state_dict(const GPTModel& model);

// One tensor of merged_state_dict, made alone (its state_dict name; an adapter's is an Error): a
// file written a tensor at a time (train_gpt --merge-lora) holds one merged weight, not all.
Tensor merged_tensor(const GPTModel& model, const std::string& name);

}  // namespace tg::models
