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

NamedTensors merged_lora_state_dict(const nn::Module& model, const std::map<std::string, Tensor>& more_merged) {
  NoGradGuard no_grad;
  std::map<std::string, Tensor> merged = more_merged;  // state_dict name -> W + (alpha / r) B A
  std::function<void(const nn::Module&, const std::string&)> visit = [&](const nn::Module& m, const std::string& path) {
    for (const auto& [name, child] : m.named_children()) {
      if (const auto* adapted = dynamic_cast<const nn::LoRALinear*>(child.get()))
        merged[path + name + ".weight"] = adapted->merged_weight();
      else visit(*child, path + name + ".");
    }
  };
  visit(model, "");
  NamedTensors out;
  for (const auto& [name, t] : model.state_dict()) {
    if (is_adapter_name(name)) continue;
    const auto m = merged.find(name);
    out.push_back({name, m != merged.end() ? m->second : t.detach()});
  }
  return out;
}

}  // namespace tg::models
