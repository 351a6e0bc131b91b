// models/lora/lora_config.cpp — LoRA's targets, and freezing and merging for any model (models/lora/lora_config.h).
#include "models/lora/lora_config.h"

#include <functional>
#include <sstream>

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

bool is_adapter_name(const std::string& name) {
  return name.find(".lora.") != std::string::npos || name.find(".qkv_lora.") != std::string::npos;
}

bool has_lora(const nn::Module& model) {
  for (const auto& [name, p] : model.named_parameters())
    if (is_adapter_name(name)) return true;
  return false;
}

void train_adapters_only(nn::Module& model) {
  for (auto& [name, p] : model.named_parameters())
    if (!is_adapter_name(name)) p.requires_grad_(false);
}

Tensor merged_lora_tensor(const nn::Module& model, const std::string& name) {
  NoGradGuard no_grad;
  // the module that holds it: the path before the last dot, one child name at a time
  const nn::Module* owner = &model;
  size_t start = 0;
  for (size_t dot = name.find('.'); owner && dot != std::string::npos; dot = name.find('.', start)) {
    const std::string child = name.substr(start, dot - start);
    const nn::Module* next = nullptr;
    for (const auto& [child_name, m] : owner->named_children())
      if (child_name == child) next = m.get();
    owner = next;
    start = dot + 1;
  }
  const auto* adapted = dynamic_cast<const nn::LoRALinear*>(owner);
  if (adapted && name.substr(start) == "weight") return adapted->merged_weight();  // W + (alpha / r) B A
  if (!is_adapter_name(name))
    for (const auto& [entry, t] : model.state_dict())
      if (entry == name) return t.detach();
  throw Error("merged_lora_tensor: the model has no tensor named \"" + name + "\" (an adapter's own are merged in)");
}

}  // namespace tg::models
