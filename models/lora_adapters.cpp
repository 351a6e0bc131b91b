// models/lora_adapters.cpp — adapters to peft's names and back, adapter_config.json.
#include "models/lora_adapters.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "autograd/io/json.h"
#include "autograd/io/safetensors.h"
#include "autograd/ops.h"
#include "models/hf_gpt2.h"
#include "nn/lora.h"

namespace tg::models {

namespace {

const std::string kPeftBlocks = "base_model.model.transformer.h.";

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

struct AdapterName {
  std::string tapegrad, peft;
  Tensor tensor;  // the model's
};

// Every adapter tensor of model, in peft's order.
std::vector<AdapterName> adapter_names(const GPTModel& model) {
  const NamedTensors state = model.named_parameters();  // the adapters are parameters (no buffer is made)
  std::vector<AdapterName> out;
  for (size_t i = 0; i < model.blocks().size(); ++i) {
    for (const Gpt2Module& m : kGpt2Block) {  // GPT-2's order: c_attn, attn.c_proj, c_fc, mlp.c_proj
      if (!m.adapter) continue;
      for (const char* matrix : {"lora_A", "lora_B"}) {
        const std::string name = "trf_blocks." + std::to_string(i) + "." + m.adapter + "." + matrix + ".weight";
        for (const auto& [n, t] : state)
          if (n == name)
            out.push_back({name, kPeftBlocks + std::to_string(i) + "." + m.gpt2 + "." + matrix + ".weight", t});
      }
    }
  }
  if (out.empty()) throw Error("the model has no LoRA adapters");
  return out;
}

std::vector<std::string> target_modules(const LoRAConfig& c) {
  std::vector<std::string> out;
  if (c.attn) out.insert(out.end(), {"c_attn", "attn.c_proj"});
  if (c.mlp) out.insert(out.end(), {"c_fc", "mlp.c_proj"});
  return out;
}

}  // namespace

NamedTensors peft_adapter_tensors(const GPTModel& model) {
  NamedTensors out;
  for (const AdapterName& a : adapter_names(model)) out.push_back({a.peft, a.tensor.detach()});
  return out;
}

void check_peft_adapters(const std::string& path, const GPTConfig& model, const LoRAConfig& lora) {
  const int64_t C = model.emb_dim, r = lora.r;
  std::vector<ExpectedAdapter> expected;
  for (int64_t i = 0; i < model.n_layers; ++i) {
    for (const Gpt2Module& m : kGpt2Block) {  // A is (r, in), B (out, r)
      const bool attn = std::string(m.gpt2).rfind("attn.", 0) == 0;
      if (!m.adapter || (attn ? !lora.attn : !lora.mlp)) continue;
      const std::string site = kPeftBlocks + std::to_string(i) + "." + m.gpt2;
      expected.push_back({site + ".lora_A.weight", {r, m.in * C}});
      expected.push_back({site + ".lora_B.weight", {m.out * C, r}});
    }
  }
  check_adapter_entries(path, expected);
}

void load_peft_adapters(GPTModel& model, const std::string& path) {
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
  for (const std::string& t : target_modules(config.lora)) targets.item(t);
  json::Writer w(json::Layout::Pretty);
  w.field("base_model_name_or_path", config.base).field("bias", "none").field("fan_in_fan_out", true)
      .field("inference_mode", true).field("init_lora_weights", true);
  const double alpha = config.lora.alpha;  // an integer without a point, as peft writes lora_alpha 16
  if (alpha == std::floor(alpha) && std::abs(alpha) < 1e15) w.field("lora_alpha", static_cast<int64_t>(alpha));
  else w.field("lora_alpha", alpha);
  w.field("lora_dropout", 0.0).field("modules_to_save", nullptr).field("peft_type", "LORA").field("r", config.lora.r)
      .field("target_modules", targets).field("task_type", "CAUSAL_LM");
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
  std::set<std::string> targets;
  for (const json::Value& t : doc["target_modules"].as_array()) targets.insert(t.as_string());
  bool matched = false;
  for (const char* text : {"attn", "mlp", "attn,mlp"}) {
    LoRAConfig c;
    parse_lora_targets(text, c);
    const std::vector<std::string> modules = target_modules(c);
    if (targets == std::set<std::string>(modules.begin(), modules.end())) {
      out.lora.attn = c.attn;
      out.lora.mlp = c.mlp;
      matched = true;
    }
  }
  if (!matched)
    throw fail("\"target_modules\" must be [\"c_attn\", \"attn.c_proj\"] (attn), [\"c_fc\", \"mlp.c_proj\"] (mlp) or all "
               "four: the adapters tapegrad puts on GPT-2");
  if (out.lora.r < 1) throw fail("\"r\" must be at least 1, got " + std::to_string(out.lora.r));
  if (!(out.lora.alpha > 0)) throw fail("\"lora_alpha\" must be positive");
  if (!nn::lora_scale_fits_float32(out.lora.r, out.lora.alpha))
    throw fail("\"lora_alpha\" / \"r\" = " + nn::python_float(out.lora.alpha / static_cast<double>(out.lora.r)) +
               ", the adapters' scale, is beyond float32's range: \"lora_alpha\" is too large");
  return out;
}

}  // namespace tg::models
