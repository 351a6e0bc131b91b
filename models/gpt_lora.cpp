// models/gpt_lora.cpp — adding LoRA adapters to a GPTModel and merging them (table in models/gpt_lora.h).
#include "models/gpt_lora.h"

#include <map>
#include <sstream>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/lora.h"

namespace tg::models {

void parse_lora_targets(const std::string& text, LoRAConfig& config) {
  config.attn = config.mlp = false;
  std::stringstream list(text);
  std::string name;
  while (std::getline(list, name, ',')) {
    if (name == "attn") config.attn = true;
    else if (name == "mlp") config.mlp = true;
    else throw Error("unknown LoRA target \"" + name + "\" in \"" + text + "\" (the targets are attn and mlp, comma-separated)");
  }
  if (!config.attn && !config.mlp) throw Error("no LoRA target in \"" + text + "\" (give attn, mlp or attn,mlp)");
}

std::string lora_targets(const LoRAConfig& config) {
  return config.attn && config.mlp ? "attn,mlp" : config.attn ? "attn" : "mlp";
}

namespace {

// An adapter's tensor in a GPTModel's state_dict: "...att.qkv_lora.lora_A.weight", "...out_proj.lora.lora_B.weight".
bool is_adapter_name(const std::string& name) {
  return name.find(".lora.") != std::string::npos || name.find(".qkv_lora.") != std::string::npos;
}

// A LoRALinear over `linear`, put where it sits in parent (child `name`) by replace_module.
std::shared_ptr<nn::LoRALinear> adapt(nn::Module& parent, const std::string& name, const nn::Linear& linear,
                                      const LoRAConfig& c) {
  return parent.replace_module(name, std::make_shared<nn::LoRALinear>(linear, c.r, c.alpha));
}

// The LoRALinear swapped in as child `name` of parent, or nullptr where the Linear is its own.
const nn::LoRALinear* adapted(const nn::Module& parent, const std::string& name) {
  for (const auto& [child_name, child] : parent.named_children())
    if (child_name == name) return dynamic_cast<const nn::LoRALinear*>(child.get());
  return nullptr;
}

}  // namespace

void apply_lora(GPTModel& model, const LoRAConfig& c) {
  if (!c.attn && !c.mlp) throw Error("apply_lora: no target (attn, mlp or both)");
  if (has_lora(model)) throw Error("apply_lora: the model has LoRA adapters already");
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
  for (auto& [name, p] : model.named_parameters())  // only the adapters train
    if (!is_adapter_name(name)) p.requires_grad_(false);
}

bool has_lora(const GPTModel& model) {
  for (const auto& [name, p] : model.named_parameters())
    if (is_adapter_name(name)) return true;
  return false;
}

NamedTensors merged_state_dict(const GPTModel& model) {
  NoGradGuard no_grad;
  std::map<std::string, Tensor> merged;  // state_dict name -> W + (alpha / r) B A
  auto merge = [&](const std::string& name, const nn::LoRALinear* layer) {
    if (layer) merged[name] = layer->merged_weight();
  };
  for (size_t i = 0; i < model.blocks().size(); ++i) {
    const TransformerBlock& block = *model.blocks()[i];
    const std::string b = "trf_blocks." + std::to_string(i) + ".";
    const CausalSelfAttention& att = *block.att;
    if (att.qkv_lora) {  // the fused update's rows: [q | k | v]
      const Tensor delta = att.qkv_lora->delta_weight();  // (3C, C)
      const int64_t C = att.d_out;
      merged[b + "att.W_query.weight"] = att.W_query->weight + delta.narrow(0, 0, C);
      merged[b + "att.W_key.weight"] = att.W_key->weight + delta.narrow(0, C, C);
      merged[b + "att.W_value.weight"] = att.W_value->weight + delta.narrow(0, 2 * C, C);
    }
    merge(b + "att.out_proj.weight", adapted(att, "out_proj"));
    merge(b + "ff.layers.0.weight", adapted(*block.ff->layers, "0"));
    merge(b + "ff.layers.2.weight", adapted(*block.ff->layers, "2"));
  }
  NamedTensors out;
  for (const auto& [name, t] : model.state_dict()) {
    if (is_adapter_name(name)) continue;
    const auto m = merged.find(name);
    out.push_back({name, m != merged.end() ? m->second : t.detach()});
  }
  return out;
}

}  // namespace tg::models
