// models/hf/hf_llama.cpp — Hugging Face Llama / Qwen folders to LlamaForCausalLM and back (the
// fields and names are in hf_llama.h).
//
// Reading: config.json to a LlamaConfig; then the weight files' headers (one file, or the index's
// shards) checked against hf_llama_layout(config) before the model is built; then each tensor
// copied into the model's parameter of the same name, one at a time.
#include "models/hf/hf_llama.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "autograd/error.h"
#include "io/atomic_file.h"
#include "io/flags.h"
#include "nn/safetensors.h"
#include "io/user_file.h"
#include "autograd/tape.h"
#include "models/hf/hf_config_reader.h"
#include "models/hf/hf_folder.h"
#include "models/sequence_classification.h"
#include "nn/init.h"

namespace tg::models {

namespace {

constexpr const char* kIndexFile = "model.safetensors.index.json";

bool is_llama_family(const std::string& model_type) {
  return model_type == "llama" || model_type == "qwen2" || model_type == "qwen3";
}

// rope_scaling (or transformers 5's rope_parameters) -> RopeScaling; "default" or null is none.
RopeScaling read_rope_scaling(const json::Value& scaling, const std::string& field, const std::string& path) {
  RopeScaling s;
  if (scaling.is_null()) return s;
  const ConfigReader read{scaling, path};
  if (!scaling.is_object()) throw Error(path + ": \"" + field + "\" must be an object or null");
  const std::string type = read.text("rope_type", read.text("type", "default"));
  if (type == "default") return s;
  if (type != "llama3")
    throw Error(path + ": \"" + field + "\" has rope_type " + json::quote(type) +
                ": tapegrad reads \"default\" and \"llama3\"");
  s.rope_type = type;
  s.factor = read.number("factor", s.factor);
  s.low_freq_factor = read.number("low_freq_factor", s.low_freq_factor);
  s.high_freq_factor = read.number("high_freq_factor", s.high_freq_factor);
  s.original_max_position_embeddings =
      read.integer("original_max_position_embeddings", s.original_max_position_embeddings);
  return s;
}

}  // namespace

bool is_hf_llama_folder(const std::string& dir) { return model_folder_kind(dir) == ModelFolderKind::llama; }

LlamaConfig hf_llama_config(const json::Value& config, const std::string& path) {
  if (!config.is_object()) throw Error(path + ": must be a JSON object");
  const ConfigReader read{config, path};
  LlamaConfig c;
  c.model_type = read.text("model_type", "");
  if (!is_llama_family(c.model_type))
    read.fail("model_type", c.model_type.empty() ? std::string("is missing: this reader takes \"llama\", \"qwen2\" and \"qwen3\"")
                            : c.model_type == "gpt2" ? std::string("is \"gpt2\": this reader takes \"llama\", \"qwen2\" and \"qwen3\"")
                                                     : model_type_problem(c.model_type));
  const bool llama = c.model_type == "llama", qwen3 = c.model_type == "qwen3";
  // transformers' defaults for each type (LlamaConfig, Qwen2Config, Qwen3Config)
  c.vocab_size = read.integer("vocab_size", llama ? 32000 : 151936);
  c.hidden_size = read.integer("hidden_size", 4096);
  c.intermediate_size = read.integer("intermediate_size", llama ? 11008 : 22016);
  c.num_hidden_layers = read.integer("num_hidden_layers", 32);
  c.num_attention_heads = read.integer("num_attention_heads", 32);
  const json::Value* kv = config.find("num_key_value_heads");
  c.num_key_value_heads = kv && !kv->is_null() ? read.integer("num_key_value_heads", 0) : c.num_attention_heads;
  const json::Value* hd = config.find("head_dim");
  const int64_t per_head = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  c.head_dim = hd && !hd->is_null() ? read.integer("head_dim", 0) : (qwen3 ? 128 : per_head);
  if (!hd && !qwen3 && c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads != 0)
    read.fail("hidden_size", "(" + std::to_string(c.hidden_size) + ") must be divisible by num_attention_heads (" +
                                 std::to_string(c.num_attention_heads) + ") when there is no head_dim");
  c.max_position_embeddings = read.integer("max_position_embeddings", llama ? 2048 : 32768);
  c.rms_norm_eps = read.number("rms_norm_eps", 1e-6);
  c.tie_word_embeddings = read.flag("tie_word_embeddings", false);
  c.attention_dropout = read.rate("attention_dropout", 0.0);
  c.initializer_range = read.number("initializer_range", 0.02);
  if (const json::Value* p = config.find("rope_parameters"); p && p->is_object()) {  // transformers 5
    c.rope_theta = ConfigReader{*p, path}.number("rope_theta", 10000.0);
    c.rope_scaling = read_rope_scaling(*p, "rope_parameters", path);
  } else {
    c.rope_theta = read.number("rope_theta", 10000.0);
    const json::Value* scaling = config.find("rope_scaling");
    if (scaling) c.rope_scaling = read_rope_scaling(*scaling, "rope_scaling", path);
  }

  if (c.model_type == "qwen2") {  // biases on q, k, v always; none on o
    const json::Value* bias = config.find("attention_bias");
    if (bias && !bias->is_null())
      read.fail("attention_bias", "is set, but qwen2 has no such switch (its q, k and v have biases, o none)");
    c.qkv_bias = true;
  } else {
    c.qkv_bias = c.o_bias = read.flag("attention_bias", false);
  }
  c.qk_norm = qwen3;
  const std::string act = read.text("hidden_act", "silu");
  if (act != "silu") read.fail("hidden_act", "is " + json::quote(act) + ": the SwiGLU of this family has \"silu\"");
  if (read.flag("mlp_bias", false)) read.fail("mlp_bias", "is true: unsupported by tapegrad");
  if (read.flag("use_sliding_window", false))
    read.fail("use_sliding_window", "is true: sliding-window attention is unsupported by tapegrad");
  if (const json::Value* types = config.find("layer_types"); types && types->is_array())
    for (const json::Value& t : types->as_array())
      if (!t.is_string() || t.as_string() != "full_attention")
        read.fail("layer_types", "has a layer other than \"full_attention\": sliding-window attention is unsupported");
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

std::string hf_llama_config_json(const LlamaConfig& c, const json::Value& original, const std::string& tapegrad) {
  const json::Value none = json::parse("{}", "hf_llama_config_json");
  const json::Value& old = original.is_object() ? original : none;
  const bool rope_parameters = old.contains("rope_parameters");  // transformers 5's form: kept as read
  json::Writer mine;
  mine.field("architectures", json::Writer::array().item(c.class_prefix() + "ForCausalLM"))
      .field("attention_dropout", c.attention_dropout);
  if (c.model_type != "qwen2") mine.field("attention_bias", c.o_bias);
  mine.field("head_dim", c.head_dim).field("hidden_act", "silu").field("hidden_size", c.hidden_size)
      .field("initializer_range", c.initializer_range).field("intermediate_size", c.intermediate_size)
      .field("max_position_embeddings", c.max_position_embeddings).field("model_type", c.model_type)
      .field("num_attention_heads", c.num_attention_heads).field("num_hidden_layers", c.num_hidden_layers)
      .field("num_key_value_heads", c.num_key_value_heads).field("rms_norm_eps", c.rms_norm_eps);
  if (!rope_parameters) {
    mine.field("rope_theta", c.rope_theta);
    if (c.rope_scaling.rope_type.empty()) {
      mine.field("rope_scaling", nullptr);
    } else {
      const RopeScaling& s = c.rope_scaling;
      mine.field("rope_scaling", json::Writer()
                                     .field("factor", s.factor).field("high_freq_factor", s.high_freq_factor)
                                     .field("low_freq_factor", s.low_freq_factor)
                                     .field("original_max_position_embeddings", s.original_max_position_embeddings)
                                     .field("rope_type", s.rope_type));
    }
  }
  mine.field("tie_word_embeddings", c.tie_word_embeddings).field("torch_dtype", "float32")
      .field("vocab_size", c.vocab_size);
  const json::Value fields = json::parse(mine.str(), "hf_llama_config_json");
  // an old value stays when it says what tapegrad would write (the same number, or the same rope)
  auto keep_old = [&](const std::string& key) {
    const json::Value* v = old.find(key);
    if (!v) return false;
    if (key == "architectures" || key == "torch_dtype") return false;
    if (key == "rope_scaling") return read_rope_scaling(*v, key, "config.json") == c.rope_scaling;
    const json::Value& value = fields[key];
    if (v->is_number() && value.is_number()) return v->as_double() == value.as_double();
    if (v->is_bool() && value.is_bool()) return v->as_bool() == value.as_bool();
    if (v->is_string() && value.is_string()) return v->as_string() == value.as_string();
    return false;
  };
  return merged_config_json(old, fields, keep_old, tapegrad);
}

std::vector<std::pair<std::string, Shape>> hf_llama_layout(const LlamaConfig& c) {
  const int64_t C = c.hidden_size, hs = c.head_dim, q = c.num_attention_heads * hs, kv = c.num_key_value_heads * hs;
  const int64_t I = c.intermediate_size;
  std::vector<std::pair<std::string, Shape>> out = {{"model.embed_tokens.weight", {c.vocab_size, C}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    const std::string a = l + "self_attn.";
    out.push_back({a + "q_proj.weight", {q, C}});
    if (c.qkv_bias) out.push_back({a + "q_proj.bias", {q}});
    out.push_back({a + "k_proj.weight", {kv, C}});
    if (c.qkv_bias) out.push_back({a + "k_proj.bias", {kv}});
    out.push_back({a + "v_proj.weight", {kv, C}});
    if (c.qkv_bias) out.push_back({a + "v_proj.bias", {kv}});
    out.push_back({a + "o_proj.weight", {C, q}});
    if (c.o_bias) out.push_back({a + "o_proj.bias", {C}});
    if (c.qk_norm) {
      out.push_back({a + "q_norm.weight", {hs}});
      out.push_back({a + "k_norm.weight", {hs}});
    }
    out.push_back({l + "mlp.gate_proj.weight", {I, C}});
    out.push_back({l + "mlp.up_proj.weight", {I, C}});
    out.push_back({l + "mlp.down_proj.weight", {C, I}});
    out.push_back({l + "input_layernorm.weight", {C}});
    out.push_back({l + "post_attention_layernorm.weight", {C}});
  }
  out.push_back({"model.norm.weight", {C}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, C}});
  return out;
}

namespace {

// A tensor a file may hold that is read past: a buffer older files carry, which tapegrad computes
// (model.rotary_emb.inv_freq, model.layers.i.self_attn.rotary_emb.inv_freq), and a tied model's
// lm_head.weight (the head is embed_tokens.weight), and a sequence classifier's score.weight (read by
// models/sequence_classification.h).
bool passed_over(const std::string& name, const LlamaConfig& c) {
  return name.ends_with("rotary_emb.inv_freq") || (name == "lm_head.weight" && c.tie_word_embeddings) ||
         name == "score.weight";
}

// 16-bit weights read as float32, every value finite, the passed-over ones skipped.
SafetensorsReadOptions weights_read_options(const LlamaConfig& c) {
  return {.float16_to_float32 = true, .finite_only = true,
          .skip = [c](const std::string& name) { return passed_over(name, c); }};
}

// The weight files of dir: model.safetensors, or the index's shards (each once, in the index's
// order), with the file each name should be in (empty for a single file).
std::vector<std::string> weight_files(const std::string& dir, std::map<std::string, std::string>* shard_of) {
  const std::string index_path = path_in(dir, kIndexFile), single = path_in(dir, "model.safetensors");
  if (!std::filesystem::exists(index_path)) {
    if (!std::filesystem::exists(single))
      throw Error(dir + ": not a Hugging Face model folder (neither model.safetensors nor " + kIndexFile + " is there)");
    return {single};
  }
  const json::Value index = json::parse_file(index_path);
  const json::Value* map = index.is_object() ? index.find("weight_map") : nullptr;
  if (!map || !map->is_object()) throw Error(index_path + ": \"weight_map\" must be an object of name -> file");
  std::vector<std::string> files;
  for (const json::Member& m : map->as_object()) {
    if (!m.value.is_string()) throw Error(index_path + ": \"weight_map\" entry " + json::quote(m.key) + " must be a file name");
    const std::string& file = m.value.as_string();
    // a NUL would end the name where the system reads it (another shard's name, perhaps), and a
    // control character would garble the messages that name it: such a name is no file's
    const bool has_control = std::any_of(file.begin(), file.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20; });
    if (file.empty() || has_control || file.find('/') != std::string::npos || file.find('\\') != std::string::npos ||
        file == "." || file == "..")
      throw Error(index_path + ": \"weight_map\" entry " + json::quote(m.key) + " names " + json::quote(file) +
                  ", not a file in the folder");
    const std::string path = path_in(dir, file);
    if (std::find(files.begin(), files.end(), path) == files.end()) {
      if (const std::string problem = user_file_problem(path); problem == "no such file")
        throw Error(index_path + ": \"weight_map\" names " + json::quote(file) + " (for " + json::quote(m.key) +
                    "), which is not in the folder");
      else if (!problem.empty())
        throw Error(index_path + ": \"weight_map\" names " + json::quote(file) + ", which " + problem);
      files.push_back(path);
    }
    (*shard_of)[m.key] = path;
  }
  if (files.empty()) throw Error(index_path + ": \"weight_map\" is empty");
  return files;
}

}  // namespace

namespace {

// The number of layers the headers hold tensors for (distinct i of "model.layers.<i>." names).
int64_t layers_in_headers(const std::vector<SafetensorsEntry>& entries) {
  std::set<std::string> layers;
  const std::string prefix = "model.layers.";
  for (const SafetensorsEntry& e : entries)
    if (e.name.starts_with(prefix)) layers.insert(e.name.substr(prefix.size(), e.name.find('.', prefix.size()) - prefix.size()));
  return static_cast<int64_t>(layers.size());
}

// config's sizes against what the files can hold, before a layout of num_hidden_layers entries is
// built (a config of 10^9 layers would take gigabytes and tens of seconds to describe before one
// header was compared): more layers than the headers hold tensors is impossible (each layer has
// several), and so is a projection whose rows (heads * head_dim) do not fit in 64 bits. Within
// that bound the layout is at most a few times the headers' size, and the names and shapes
// compared against it say which tensor differs.
void check_config_fits(const LlamaConfig& c, const std::vector<SafetensorsEntry>& entries, const std::string& files,
                       const std::string& config_path) {
  const int64_t layers = layers_in_headers(entries);
  if (c.num_hidden_layers > static_cast<int64_t>(entries.size()))
    throw Error(config_path + ": \"num_hidden_layers\" is " + std::to_string(c.num_hidden_layers) + " but " + files +
                " holds tensors for " + std::to_string(layers) + " layer" + (layers == 1 ? "" : "s"));
  int64_t rows = 0;
  for (const auto& [field, heads] : {std::pair<const char*, int64_t>{"num_attention_heads", c.num_attention_heads},
                                     {"num_key_value_heads", c.num_key_value_heads}})
    if (__builtin_mul_overflow(heads, c.head_dim, &rows))
      throw Error(config_path + ": \"" + std::string(field) + "\" (" + std::to_string(heads) + ") times \"head_dim\" (" +
                  std::to_string(c.head_dim) + ") does not fit in 64 bits: no file holds such a projection");
}

// Every header of files checked against config's layout (names, shapes, which shard), before any
// model takes memory; converted_dtypes, had_lm_head and lm_head_missing are filled in. where: the
// folder or file named when a tensor is missing from all of them. head_optional: an untied
// lm_head.weight may be missing (a classifier's folder, which transformers saves without it).
void check_weight_headers(const LlamaConfig& config, const std::vector<std::string>& files,
                          std::map<std::string, std::string>& shard_of, const std::string& where, HfLlamaInfo* info,
                          bool head_optional) {
  std::vector<std::pair<std::string, std::vector<SafetensorsEntry>>> headers;
  std::vector<SafetensorsEntry> all_entries;
  for (const std::string& file : files) {
    headers.push_back({file, safetensors_entries(file, weights_read_options(config))});
    all_entries.insert(all_entries.end(), headers.back().second.begin(), headers.back().second.end());
  }
  check_config_fits(config, all_entries,
                    files.size() == 1 ? std::filesystem::path(files.front()).filename().string()
                                      : "the " + std::to_string(files.size()) + " shards",
                    // where: the folder, or a weights file beside its config.json
                    std::filesystem::is_directory(where) ? path_in(where, "config.json")
                                                         : path_in(std::filesystem::path(where).parent_path().string(), "config.json"));
  const auto layout = hf_llama_layout(config);
  std::map<std::string, Shape> wanted(layout.begin(), layout.end());
  std::set<std::string> seen;
  for (const auto& [file, entries] : headers) {
    for (const SafetensorsEntry& e : entries) {
      if (!shard_of.empty() && shard_of.count(e.name) && shard_of[e.name] != file)
        throw Error(file + ": tensor \"" + e.name + "\" is here, but " + kIndexFile + " puts it in " + shard_of[e.name]);
      if (passed_over(e.name, config)) {
        info->had_lm_head = info->had_lm_head || e.name == "lm_head.weight";
        continue;
      }
      const auto it = wanted.find(e.name);
      if (it == wanted.end())
        throw Error(file + ": tensor \"" + e.name + "\" is not a weight of a " + config.model_type +
                    " model of this config.json");
      if (e.shape != it->second)
        throw Error(file + ": tensor \"" + e.name + "\" has shape " + shape_str(e.shape) + ", the config says " +
                    shape_str(it->second));
      if (!seen.insert(e.name).second) throw Error(file + ": tensor \"" + e.name + "\" is in two files");
    }
  }
  for (const auto& [name, shape] : layout) {
    if (!seen.count(name) && head_optional && name == "lm_head.weight") {
      info->lm_head_missing = true;
      continue;
    }
    if (!seen.count(name))
      throw Error(where + ": tensor \"" + name + "\" " + shape_str(shape) + " is missing from " +
                  (shard_of.empty() ? std::filesystem::path(files.front()).filename().string() : shard_of.count(name) ? shard_of[name] : std::string("every shard")));
  }
  for (const auto& [name, file] : shard_of)
    if (!seen.count(name) && !passed_over(name, config))
      throw Error(path_in(where, kIndexFile) + ": \"weight_map\" names \"" + name + "\", which " + file + " does not hold");
  info->converted_dtypes = widened_dtypes(all_entries);
}

// The files' tensors copied into the model's own (their headers checked first); a missing
// lm_head.weight (info.lm_head_missing) is zeros. With kCheckpoint, each matrix a file holds as
// BF16 or F16 becomes a frozen bfloat16 or float16 tensor first (nn::make_frozen_16bit), read
// without widening, unless `trained` names it.
void read_weights(LlamaForCausalLM& model, const std::vector<std::string>& files, const HfLlamaInfo& info,
                  WeightsDtype dtype, const std::set<std::string>& trained) {
  const NamedTensors parameters = model.named_parameters();
  const std::map<std::string, Tensor> targets(parameters.begin(), parameters.end());
  SafetensorsReadOptions options = weights_read_options(model.config());
  if (dtype == WeightsDtype::kCheckpoint)  // the matrices: every linear layer's weight and the embedding
    options.keep_16bit = [&](const std::string& name) {
      return targets.count(name) && targets.at(name).dim() == 2 && !trained.count(name);
    };
  // each weight read straight into the model's own tensor (passed_over ones are skipped): no copy
  // of any is held at once, a 16-bit file's included
  options.read_into = [&](const std::string& name) { return targets.at(name); };
  NoGradGuard no_grad;
  for (const std::string& file : files) {
    const Activity reading("reading " + file);
    if (options.keep_16bit)
      for (const SafetensorsEntry& e : safetensors_entries(file, options))
        if (is_16bit(e.dtype) && targets.count(e.name))
          nn::make_frozen_16bit(targets.at(e.name), e.dtype);
    for_each_safetensor(file, options, [](const std::string&, const Tensor&) {});
  }
  if (info.lm_head_missing) Tensor(targets.at("lm_head.weight")).zero_();  // a handle to the same storage
}

// What a kCheckpoint read widened: BF16 (F16) leaves the list when the model kept any weight
// bfloat16 (float16); a folder's norms, a few kB, are still read as float32.
std::vector<std::string> converted_by(const LlamaForCausalLM& model, std::vector<std::string> converted) {
  for (const auto& [name, p] : model.named_parameters()) {
    if (p.dtype() == kBFloat16) std::erase(converted, std::string("BF16"));
    if (p.dtype() == kFloat16) std::erase(converted, std::string("F16"));
  }
  return converted;
}

}  // namespace

HfLlama load_hf_llama(const std::string& dir, WeightsDtype dtype) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  const std::string config_path = path_in(dir, "config.json");
  if (!std::filesystem::exists(config_path)) throw Error(dir + ": not a Hugging Face model folder (config.json is missing)");
  HfLlama out;
  out.info.config = json::parse_file(config_path);
  out.config = hf_llama_config(out.info.config, config_path);
  std::map<std::string, std::string> shard_of;
  out.info.weight_files = weight_files(dir, &shard_of);
  check_weight_headers(out.config, out.info.weight_files, shard_of, dir, &out.info, is_classifier_config(out.info.config));

  const Activity building("building the model of " + config_path);
  {
    // every weight is read below (or zeroed: lm_head_missing), so none is written first
    const nn::init::SkipInitGuard no_draws(nn::init::SkipInit::kLeaveUnset);
    out.model = std::make_unique<LlamaForCausalLM>(out.config);
  }
  read_weights(*out.model, out.info.weight_files, out.info, dtype, /*trained=*/{});
  if (dtype == WeightsDtype::kCheckpoint) out.info.converted_dtypes = converted_by(*out.model, out.info.converted_dtypes);
  out.model->eval();
  return out;
}

HfLlamaInfo check_hf_llama_weights(const LlamaConfig& config, const std::string& path) {
  std::map<std::string, std::string> shard_of;  // a folder's index: name -> shard
  HfLlamaInfo info;
  const bool folder = std::filesystem::is_directory(path);
  info.weight_files = folder ? weight_files(path, &shard_of) : std::vector{path};
  const bool classifier = folder && is_classifier_config(json::parse_file(path_in(path, "config.json")));
  check_weight_headers(config, info.weight_files, shard_of, path, &info, classifier);
  return info;
}

HfLlamaInfo load_hf_llama_weights(LlamaForCausalLM& model, const std::string& path, WeightsDtype dtype,
                                  const std::set<std::string>& trained) {
  HfLlamaInfo info = check_hf_llama_weights(model.config(), path);
  read_weights(model, info.weight_files, info, dtype, trained);
  if (dtype == WeightsDtype::kCheckpoint) info.converted_dtypes = converted_by(model, info.converted_dtypes);
  return info;
}

NamedTensors hf_llama_tensors(const LlamaForCausalLM& model, bool keep_16bit) {
  const NamedTensors parameters = model.named_parameters();
  const std::map<std::string, Tensor> params(parameters.begin(), parameters.end());
  NamedTensors tensors;
  for (const auto& [name, shape] : hf_llama_layout(model.config())) {
    const Tensor& p = params.at(name);
    tensors.push_back({name, keep_16bit && is_16bit(p.dtype()) ? p.detach() : p.detach().to(kFloat32)});
  }
  return tensors;
}

std::vector<TensorToWrite> hf_llama_tensors_to_write(const LlamaConfig& config, WeightMaker weight) {
  const auto shared = std::make_shared<const WeightMaker>(std::move(weight));  // one for every entry
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, shape] : hf_llama_layout(config))
    tensors.push_back({name, kFloat32, shape, [shared, name = name] {
                         NoGradGuard no_grad;
                         return (*shared)(name).detach().to(kFloat32);
                       }});
  return tensors;
}

void save_hf_llama(const LlamaForCausalLM& model, const std::string& dir, const HfLlamaInfo& from,
                   const std::string& tapegrad) {
  if (std::filesystem::exists(path_in(dir, kIndexFile)))
    throw Error(path_in(dir, kIndexFile) + ": the folder holds a sharded model; save to another folder (its shards "
                                          "would be read instead of the new model.safetensors)");
  const NamedTensors parameters = model.named_parameters();
  const std::map<std::string, Tensor> params(parameters.begin(), parameters.end());
  const WeightMaker parameter = [&params](const std::string& name) { return params.at(name); };
  AtomicFile config(path_in(dir, "config.json"), "save_hf_llama");
  AtomicFile weights(path_in(dir, "model.safetensors"), "save_hf_llama");
  save_safetensors(weights, hf_llama_tensors_to_write(model.config(), parameter), {{"format", "pt"}});
  config.write(hf_llama_config_json(model.config(), from.config, tapegrad));
  config.prepare();
  weights.prepare();
  weights.commit();
  config.commit();
}

}  // namespace tg::models
