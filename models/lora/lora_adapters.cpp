// models/lora/lora_adapters.cpp — adapters to peft's names and back, adapter_config.json.
#include "models/lora/lora_adapters.h"
#include "models/sequence_classification.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "models/hf/hf_gpt2.h"
#include "nn/lora.h"

namespace tg::models {

namespace {

// Where one adapter sits: its module's path in tapegrad's model and in peft's, and the sizes of
// the Linear it adapts (A is (r, in), B (out, r)).
struct AdapterSite {
  std::string tapegrad, peft;
  int64_t in, out;
};

// GPT-2's adapters (the table in the header), block by block.
std::vector<AdapterSite> adapter_sites(const GPTConfig& config, const LoRAConfig& lora) {
  const int64_t C = config.emb_dim;
  std::vector<AdapterSite> out;
  for (int64_t i = 0; i < config.n_layers; ++i) {
    for (const Gpt2Module& m : kGpt2Block) {  // GPT-2's order: c_attn, attn.c_proj, c_fc, mlp.c_proj
      const bool attn = std::string(m.gpt2).rfind("attn.", 0) == 0;
      if (!m.adapter || (attn ? !lora.attn : !lora.mlp)) continue;
      const std::string block = std::to_string(i) + ".";
      out.push_back({"trf_blocks." + block + m.adapter, "base_model.model.transformer.h." + block + m.gpt2, m.in * C,
                     m.out * C});
    }
  }
  return out;
}

// A Llama's adapters (models/lora/llama_lora.h), layer by layer.
std::vector<AdapterSite> adapter_sites(const LlamaConfig& c, const LoRAConfig& lora) {
  const int64_t C = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  const int64_t I = c.intermediate_size;
  struct Linear {
    const char* name;
    int64_t in, out;
    bool attn;
  };
  const Linear layer[] = {{"self_attn.q_proj", C, q, true},      {"self_attn.k_proj", C, kv, true},
                          {"self_attn.v_proj", C, kv, true},     {"self_attn.o_proj", q, C, true},
                          {"mlp.gate_proj", C, I, false},        {"mlp.up_proj", C, I, false},
                          {"mlp.down_proj", I, C, false}};
  std::vector<AdapterSite> out;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    for (const Linear& l : layer) {
      if (l.attn ? !lora.attn : !lora.mlp) continue;
      const std::string module = "model.layers." + std::to_string(i) + "." + l.name;
      out.push_back({module + ".lora", "base_model.model." + module, l.in, l.out});
    }
  }
  return out;
}

// Why lora.r is too large for the matrices at sites ("" when it fits): the smallest min(in, out)
// of them bounds the rank of any update B A.
std::string rank_problem(const std::vector<AdapterSite>& sites, const LoRAConfig& lora) {
  const AdapterSite* smallest = nullptr;
  for (const AdapterSite& s : sites)
    if (!smallest || std::min(s.in, s.out) < std::min(smallest->in, smallest->out)) smallest = &s;
  if (!smallest || lora.r <= std::min(smallest->in, smallest->out)) return "";
  const std::string model_name = smallest->peft.substr(std::string("base_model.model.").size());  // the model's own name
  return "above the smallest adapted matrix's min(in, out) = " + std::to_string(std::min(smallest->in, smallest->out)) +
         " (" + model_name + ", " + std::to_string(smallest->in) + " in x " + std::to_string(smallest->out) +
         " out): a rank past it adds nothing";
}

// A tensor the adapters file must have: peft's name, its shape.
struct ExpectedAdapter {
  std::string peft;
  Shape shape;
};

// The adapters file's header (no data read) against the tensors it must hold: each of its names
// one of them, float32 and of that shape, and none missing.
void check_adapter_entries(const std::string& path, const std::vector<ExpectedAdapter>& expected) {
  const std::vector<SafetensorsEntry> file = safetensors_entries(path);
  std::set<std::string> found;
  for (const SafetensorsEntry& e : file) {
    if (e.name == kPeftScoreWeight) continue;  // a classifier's head (models/sequence_classification.h)
    const auto match = std::find_if(expected.begin(), expected.end(), [&](const ExpectedAdapter& a) { return a.peft == e.name; });
    if (match == expected.end())
      throw Error(path + ": unknown tensor \"" + e.name + "\" (not a LoRA adapter of this model's blocks and targets)");
    if (e.shape != match->shape || e.dtype != kFloat32)
      throw Error(path + ": tensor \"" + e.name + "\" is " + dtype_name(e.dtype) + " of shape " + shape_str(e.shape) +
                  ", expected float32 of shape " + shape_str(match->shape) + " (this run's r and model)");
    found.insert(e.name);
  }
  for (const ExpectedAdapter& a : expected)
    if (!found.count(a.peft)) throw Error(path + ": tensor \"" + a.peft + "\" is missing");
}

// The tensors of the adapters apply_lora(lora) adds at sites.
std::vector<ExpectedAdapter> expected_adapters(const std::vector<AdapterSite>& sites, int64_t r) {
  std::vector<ExpectedAdapter> out;
  for (const AdapterSite& s : sites) {
    out.push_back({s.peft + ".lora_A.weight", {r, s.in}});
    out.push_back({s.peft + ".lora_B.weight", {s.out, r}});
  }
  return out;
}

struct AdapterName {
  std::string tapegrad, peft;
  Tensor tensor;  // the model's
};

// Every adapter tensor of model, in peft's order.
std::vector<AdapterName> adapter_names(const CausalLM& model) {
  const LoRAConfig every{.r = 1, .alpha = 1.0, .attn = true, .mlp = true};  // every site; those with adapters are kept
  std::vector<AdapterSite> sites;
  if (const auto* gpt = dynamic_cast<const GPTModel*>(&model)) sites = adapter_sites(gpt->config(), every);
  else if (const auto* llama = dynamic_cast<const LlamaForCausalLM*>(&model)) sites = adapter_sites(llama->config(), every);
  const NamedTensors state = model.named_parameters();  // the adapters are parameters (no buffer is made)
  std::vector<AdapterName> out;
  for (const AdapterSite& s : sites) {
    for (const char* matrix : {".lora_A.weight", ".lora_B.weight"}) {
      const std::string name = s.tapegrad + matrix;
      for (const auto& [n, t] : state)
        if (n == name) out.push_back({name, s.peft + matrix, t});
    }
  }
  if (out.empty()) throw Error("the model has no LoRA adapters");
  return out;
}

std::vector<std::string> target_modules(LoraFamily family, const LoRAConfig& c) {
  std::vector<std::string> out;
  if (family == LoraFamily::gpt2) {
    if (c.attn) out.insert(out.end(), {"c_attn", "attn.c_proj"});
    if (c.mlp) out.insert(out.end(), {"c_fc", "mlp.c_proj"});
  } else {
    if (c.attn) out.insert(out.end(), {"q_proj", "k_proj", "v_proj", "o_proj"});
    if (c.mlp) out.insert(out.end(), {"gate_proj", "up_proj", "down_proj"});
  }
  return out;
}

}  // namespace

std::string family_name(LoraFamily family) { return family == LoraFamily::gpt2 ? "GPT-2" : "Llama / Qwen"; }

NamedTensors peft_adapter_tensors(const CausalLM& model) {
  NamedTensors out;
  for (const AdapterName& a : adapter_names(model)) out.push_back({a.peft, a.tensor.detach()});
  return out;
}

// (every block has the same matrices: the first one's are looked at)
std::string lora_rank_problem(const GPTConfig& config, const LoRAConfig& lora) {
  GPTConfig one_block = config;
  one_block.n_layers = std::min<int64_t>(config.n_layers, 1);
  return rank_problem(adapter_sites(one_block, lora), lora);
}

std::string lora_rank_problem(const LlamaConfig& config, const LoRAConfig& lora) {
  LlamaConfig one_layer = config;
  one_layer.num_hidden_layers = std::min<int64_t>(config.num_hidden_layers, 1);
  return rank_problem(adapter_sites(one_layer, lora), lora);
}

void check_peft_adapters(const std::string& path, const GPTConfig& config, const LoRAConfig& lora) {
  check_adapter_entries(path, expected_adapters(adapter_sites(config, lora), lora.r));
}

void check_peft_adapters(const std::string& path, const LlamaConfig& config, const LoRAConfig& lora) {
  check_adapter_entries(path, expected_adapters(adapter_sites(config, lora), lora.r));
}

void load_peft_adapters(CausalLM& model, const std::string& path) {
  const std::vector<AdapterName> names = adapter_names(model);
  std::vector<ExpectedAdapter> expected;
  for (const AdapterName& a : names) expected.push_back({a.peft, a.tensor.sizes()});
  check_adapter_entries(path, expected);  // before any data is read
  NamedTensors state;  // tapegrad's names
  for (const auto& [name, t] : load_safetensors(path, {.finite_only = true}))  // an inf or nan: an Error naming it
    for (const AdapterName& a : names)
      if (a.peft == name) state.push_back({a.tapegrad, t});
  model.load_state_dict(state, /*strict=*/false, path);  // the adapters only; checked above
}

std::string adapter_config_json(const AdapterConfig& config) {
  json::Writer targets = json::Writer::array();
  for (const std::string& t : target_modules(config.family, config.lora)) targets.item(t);
  json::Writer w(json::Layout::Pretty);
  w.field("base_model_name_or_path", config.base).field("bias", "none")
      .field("fan_in_fan_out", config.family == LoraFamily::gpt2)  // GPT-2's Conv1D keeps (in, out)
      .field("inference_mode", true).field("init_lora_weights", true);
  const double alpha = config.lora.alpha;  // an integer without a point, as peft writes lora_alpha 16
  if (alpha == std::floor(alpha) && std::abs(alpha) < 1e15) w.field("lora_alpha", static_cast<int64_t>(alpha));
  else w.field("lora_alpha", alpha);
  w.field("lora_dropout", 0.0);
  if (config.classifier) w.field("modules_to_save", json::Writer::array().item("score"));
  else w.field("modules_to_save", nullptr);
  w.field("peft_type", "LORA").field("r", config.lora.r).field("target_modules", targets)
      .field("task_type", config.classifier ? "SEQ_CLS" : "CAUSAL_LM");
  return w.str() + "\n";
}

AdapterConfig read_adapter_config(const std::string& path) {
  const json::Value doc = json::parse_file(path);
  auto fail = [&](const std::string& what) -> Error { return Error(path + ": " + what); };
  if (!doc.is_object() || !doc.contains("peft_type") || !doc["peft_type"].is_string() ||
      doc["peft_type"].as_string() != "LORA")
    throw fail("not a LoRA adapter config (\"peft_type\": \"LORA\" is missing)");
  AdapterConfig out;
  out.lora.r = doc["r"].as_int64();
  out.lora.alpha = doc["lora_alpha"].as_double();
  out.base = doc["base_model_name_or_path"].as_string();
  out.classifier = doc.contains("task_type") && doc["task_type"].is_string() && doc["task_type"].as_string() == "SEQ_CLS";
  std::set<std::string> targets;
  for (const json::Value& t : doc["target_modules"].as_array()) targets.insert(t.as_string());
  bool matched = false;
  for (const LoraFamily family : {LoraFamily::gpt2, LoraFamily::llama}) {
    for (const char* text : {"attn", "mlp", "attn,mlp"}) {
      LoRAConfig c;
      parse_lora_targets(text, c);
      const std::vector<std::string> modules = target_modules(family, c);
      if (targets == std::set<std::string>(modules.begin(), modules.end())) {
        out.lora.attn = c.attn;
        out.lora.mlp = c.mlp;
        out.family = family;
        matched = true;
      }
    }
  }
  if (!matched)
    throw fail("\"target_modules\" must be GPT-2's [\"c_attn\", \"attn.c_proj\"] (attn), [\"c_fc\", \"mlp.c_proj\"] "
               "(mlp) or all four, or a Llama's [\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"] (attn), [\"gate_proj\", "
               "\"up_proj\", \"down_proj\"] (mlp) or all seven: the adapters tapegrad puts on these models");
  if (out.lora.r < 1) throw fail("\"r\" must be at least 1, got " + std::to_string(out.lora.r));
  if (!(out.lora.alpha > 0)) throw fail("\"lora_alpha\" must be positive");
  if (!nn::lora_scale_fits_float32(out.lora.r, out.lora.alpha))
    throw fail("\"lora_alpha\" / \"r\" = " + nn::python_float(out.lora.alpha / static_cast<double>(out.lora.r)) +
               ", the adapters' scale, is beyond float32's range: \"lora_alpha\" is too large");
  return out;
}

}  // namespace tg::models
