// models/lora/gpt_lora.cpp — adding LoRA adapters to a GPTModel and merging them (table in models/lora/gpt_lora.h).
#include "models/lora/gpt_lora.h"

#include <map>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/lora/lora_adapters.h"
#include "nn/lora.h"

namespace tg::models {

namespace {

// A LoRALinear over `linear`, put where it sits in parent (child `name`) by replace_module.
std::shared_ptr<nn::LoRALinear> adapt(nn::Module& parent, const std::string& name, const nn::Linear& linear,
                                      const LoRAConfig& c) {
  return parent.replace_module(name, std::make_shared<nn::LoRALinear>(linear, c.r, c.alpha));
}

}  // namespace

void apply_lora(GPTModel& model, const LoRAConfig& c) {
  if (!c.attn && !c.mlp) throw Error("apply_lora: no target (attn, mlp or both)");
  if (has_lora(model)) throw Error("apply_lora: the model has LoRA adapters already");
  if (const std::string why = lora_rank_problem(model.config(), c); !why.empty())
    throw Error("apply_lora: r = " + std::to_string(c.r) + ": " + why);
  // LoRA's constructor checks r and alpha; the first adapter made throws before anything changes
  for (const std::shared_ptr<TransformerBlock>& block : model.blocks()) {  // peft's order: c_attn, c_proj, c_fc, c_proj
    if (c.attn) {
      block->att->add_qkv_lora(c.r, c.alpha);
      block->att->out_proj = adapt(*block->att, "out_proj", *block->att->out_proj, c);  // the handle forward calls
    }
    if (c.mlp) {  // FeedForward runs the swapped-in layers one by one
      adapt(*block->ff->layers, "0", *block->ff->expand, c);
      adapt(*block->ff->layers, "2", *block->ff->project, c);
    }
  }
  train_adapters_only(model);
}

NamedTensors merged_state_dict(const GPTModel& model) {
  NoGradGuard no_grad;
  std::map<std::string, Tensor> qkv;  // the fused update's rows [q | k | v], each to its own Linear
  for (size_t i = 0; i < model.blocks().size(); ++i) {
    const CausalSelfAttention& att = *model.blocks()[i]->att;
    if (!att.qkv_lora) continue;
    const std::string b = "trf_blocks." + std::to_string(i) + ".att.";
    const Tensor delta = att.qkv_lora->delta_weight();  // (3C, C)
    const int64_t C = att.d_out;
    qkv[b + "W_query.weight"] = att.W_query->weight + delta.narrow(0, 0, C);
    qkv[b + "W_key.weight"] = att.W_key->weight + delta.narrow(0, C, C);
    qkv[b + "W_value.weight"] = att.W_value->weight + delta.narrow(0, 2 * C, C);
  }
  return merged_lora_state_dict(model, qkv);  // and out_proj's and the feed-forward's LoRALinears
}

}  // namespace tg::models
