// models/lora/gpt_lora.cpp — adding LoRA adapters to a GPTModel and merging them (table in models/lora/gpt_lora.h).
#include "models/lora/gpt_lora.h"

#include <algorithm>
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

Tensor merged_tensor(const GPTModel& model, const std::string& name) {
  NoGradGuard no_grad;
  // the fused update's rows [q | k | v] of block i, each to its own Linear
  const std::string prefix = "trf_blocks.";
  if (name.starts_with(prefix)) {
    const size_t dot = name.find('.', prefix.size());
    const std::string rest = dot == std::string::npos ? "" : name.substr(dot + 1);
    const std::vector<std::string> parts = {"att.W_query.weight", "att.W_key.weight", "att.W_value.weight"};
    const auto part = std::find(parts.begin(), parts.end(), rest);
    if (part != parts.end()) {
      const size_t i = std::stoul(name.substr(prefix.size(), dot - prefix.size()));
      const CausalSelfAttention& att = *model.blocks().at(i)->att;
      if (att.qkv_lora) {
        const int64_t C = att.d_out, row = C * (part - parts.begin());
        const Tensor& W = part == parts.begin() ? att.W_query->weight : part == parts.begin() + 1 ? att.W_key->weight
                                                                                                   : att.W_value->weight;
        return W + att.qkv_lora->delta_weight().narrow(0, row, C);  // delta (3C, C): this Linear's C rows
      }
    }
  }
  return merged_lora_tensor(model, name);  // out_proj's and the feed-forward's LoRALinears, or as it is
}

NamedTensors merged_state_dict(const GPTModel& model) {
  NamedTensors out;
  for (const auto& [name, t] : model.state_dict())
    if (!is_adapter_name(name)) out.push_back({name, merged_tensor(model, name)});
  return out;
}

}  // namespace tg::models
