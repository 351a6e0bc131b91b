// models/lora/lora_adapters.h — a LoRA run's adapters (models/lora/gpt_lora.h, models/lora/llama_lora.h) in
// PyTorch peft's files, as PeftModel.save_pretrained writes them.
//
// Read first: peft_adapter_tensors (the adapters file's names and order), then AdapterConfig
// (adapter_config.json's fields); load_peft_adapters and read_adapter_config read them back.
#pragma once
#include <string>

#include "models/causal_lm.h"
#include "models/gpt.h"
#include "models/lora/gpt_lora.h"  // apply_lora, for either family: a reader of these files adds the adapters first
#include "models/llama.h"
#include "models/lora/llama_lora.h"
#include "models/lora/lora_config.h"

namespace tg::models {

// peft's own file is named adapter_model.safetensors; a run keeps its adapters as
// adapters.safetensors (train/run_folder.h).
inline constexpr const char* kAdaptersFile = "adapters.safetensors";
inline constexpr const char* kAdapterConfigFile = "adapter_config.json";

// The model family of an adapter_config.json's target_modules: whose modules the adapters sit on.
enum class LoraFamily { gpt2, llama };  // llama: the Llama / Qwen2 / Qwen3 models of models/llama.h

// The model's adapter tensors under peft's names, in peft's order (detached); throws if the model
// has none. peft wraps the Hugging Face model (base_model.model) and keeps each adapter's A and B
// as nn.Linear modules lora_A and lora_B, whose adapter name ("default") save_pretrained strips.
// For block i of GPT-2 (C = n_embd):
//   base_model.model.transformer.h.{i}.attn.c_attn.lora_A.weight (r, C)    <- att.qkv_lora.lora_A.weight
//   base_model.model.transformer.h.{i}.attn.c_attn.lora_B.weight (3C, r)   <- att.qkv_lora.lora_B.weight
//   ....attn.c_proj.lora_{A,B}.weight  (r, C), (C, r)    <- att.out_proj.lora.lora_{A,B}.weight
//   ....mlp.c_fc.lora_{A,B}.weight     (r, C), (4C, r)   <- ff.layers.0.lora.lora_{A,B}.weight
//   ....mlp.c_proj.lora_{A,B}.weight   (r, 4C), (C, r)   <- ff.layers.2.lora.lora_{A,B}.weight
// and for layer i of a Llama / Qwen (the shapes in models/lora/llama_lora.h):
//   base_model.model.model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_{A,B}.weight
//                                       <- model.layers.{i}.self_attn.{q,k,v,o}_proj.lora.lora_{A,B}.weight
//   base_model.model.model.layers.{i}.mlp.{gate,up,down}_proj.lora_{A,B}.weight   (likewise)
// in that order, block by block, float32, metadata {"format": "pt"} (and a run's "step"). A and
// B are nn.Linear weights in peft for GPT-2's Conv1D layers too, so nothing is transposed: only
// the merge sees Conv1D's (in, out) orientation (peft's fan_in_fan_out, true for GPT-2 alone).
NamedTensors peft_adapter_tensors(const CausalLM& model);

// Reads the adapters of a peft-named file (the tensors above) into model, which has adapters of
// the same config; all or nothing. Errors name path and the tensor (unknown, missing, a shape, found
// in the file's header before any data is read; an inf or nan and its index).
void load_peft_adapters(CausalLM& model, const std::string& path);

// The adapters file's header (no data read) checked as load_peft_adapters checks it, against the
// adapters apply_lora(lora) would add to a model of config: a file and an adapter_config.json that
// disagree (r 1e6 beside rank-8 adapters) are refused before any adapter takes memory.
void check_peft_adapters(const std::string& path, const GPTConfig& config, const LoRAConfig& lora);
void check_peft_adapters(const std::string& path, const LlamaConfig& config, const LoRAConfig& lora);

// LoRA's rank against the matrices it adapts: an update B A of rank r on a (out, in) weight has
// rank at most min(in, out), so an r above the smallest adapted matrix's min(in, out) adds
// parameters (and memory) and nothing else. Returns "" when r fits, else why not, naming the
// limit and that matrix: "above the smallest adapted matrix's min(in, out) = 16
// (model.layers.0.self_attn.k_proj, 16 in x 16 out): a rank past it adds nothing". Reads the
// config alone (nothing is allocated), so a program asks it before building the model.
std::string lora_rank_problem(const GPTConfig& config, const LoRAConfig& lora);
std::string lora_rank_problem(const LlamaConfig& config, const LoRAConfig& lora);

// What adapter_config.json says: LoraConfig's fields that say what the adapters are.
//   {"base_model_name_or_path": the base folder (an absolute path), "bias": "none",
//    "fan_in_fan_out": true for GPT-2, false for a Llama, "inference_mode": true,
//    "init_lora_weights": true, "lora_alpha": alpha, "lora_dropout": 0.0, "modules_to_save": null,
//    "peft_type": "LORA", "r": r, "target_modules": (below), "task_type": "CAUSAL_LM"}
//   target_modules     attn                                  mlp
//   GPT-2              ["c_attn", "attn.c_proj"]             ["c_fc", "mlp.c_proj"]
//   Llama / Qwen       ["q_proj", "k_proj", "v_proj", "o_proj"]   ["gate_proj", "up_proj", "down_proj"]
//   or both lists together. (peft matches a target module by the end of its name: "attn.c_proj"
//   is GPT-2's attention's c_proj alone, "c_attn" the fused q, k, v.) The names say the family.
struct AdapterConfig {
  LoRAConfig lora;
  std::string base;  // base_model_name_or_path
  LoraFamily family = LoraFamily::gpt2;
  // a classifier's adapters (task_type "SEQ_CLS"): the head trains whole beside them, peft's
  // modules_to_save ["score"], its weight in the adapters file as kPeftScoreWeight
  bool classifier = false;
};
std::string adapter_config_json(const AdapterConfig& config);
// path: the file; errors name it and the field (an r below 1, a lora_alpha that is not positive or
// whose scale lora_alpha / r overflows float32, target_modules of neither family).
AdapterConfig read_adapter_config(const std::string& path);

// "GPT-2" or "Llama / Qwen", for messages.
std::string family_name(LoraFamily family);

}  // namespace tg::models
