// models/lora/llama_lora.cpp — adding LoRA adapters to a LlamaForCausalLM (table in models/lora/llama_lora.h).
#include "models/lora/llama_lora.h"

#include "models/lora/lora_adapters.h"
#include "nn/lora.h"

namespace tg::models {

namespace {

// Swaps the Linear `linear`, child `name` of parent, for a LoRALinear over it, and points the
// handle the forward calls at the new layer.
void adapt(nn::Module& parent, const std::string& name, std::shared_ptr<nn::Linear>& linear, const LoRAConfig& c) {
  linear = parent.replace_module(name, std::make_shared<nn::LoRALinear>(*linear, c.r, c.alpha));
}

}  // namespace

void apply_lora(LlamaForCausalLM& model, const LoRAConfig& c) {
  if (!c.attn && !c.mlp) throw Error("apply_lora: no target (attn, mlp or both)");
  if (has_lora(model)) throw Error("apply_lora: the model has LoRA adapters already");
  if (const std::string why = lora_rank_problem(model.config(), c); !why.empty())
    throw Error("apply_lora: r = " + std::to_string(c.r) + ": " + why);
  // LoRA's constructor checks r and alpha; the first adapter made throws before anything changes
  for (const std::shared_ptr<LlamaDecoderLayer>& layer : model.model->decoder_layers) {
    if (c.attn) {  // peft's order: q, k, v, o, then gate, up, down
      LlamaAttention& att = *layer->self_attn;
      adapt(att, "q_proj", att.q_proj, c);
      adapt(att, "k_proj", att.k_proj, c);
      adapt(att, "v_proj", att.v_proj, c);
      adapt(att, "o_proj", att.o_proj, c);
    }
    if (c.mlp) {
      LlamaMLP& mlp = *layer->mlp;
      adapt(mlp, "gate_proj", mlp.gate_proj, c);
      adapt(mlp, "up_proj", mlp.up_proj, c);
      adapt(mlp, "down_proj", mlp.down_proj, c);
    }
  }
  train_adapters_only(model);
}

NamedTensors merged_state_dict(const LlamaForCausalLM& model) {
  NamedTensors out;
  for (const auto& [name, t] : model.state_dict())
    if (!is_adapter_name(name)) out.push_back({name, merged_tensor(model, name)});
  return out;
}

Tensor merged_tensor(const LlamaForCausalLM& model, const std::string& name) { return merged_lora_tensor(model, name); }

}  // namespace tg::models
