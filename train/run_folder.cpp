// train/run_folder.cpp — writing and reading a run folder.
#include "train/run_folder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <vector>

#include "autograd/io/atomic_file.h"
#include "autograd/random/generator.h"
#include "autograd/io/json.h"
#include "autograd/ops.h"
#include "autograd/io/safetensors.h"
#include "autograd/io/user_file.h"
#include "autograd/io/flags.h"
#include "models/hf_config_reader.h"
#include "models/hf_folder.h"
#include "models/hf_gpt2.h"
#include "models/hf_llama.h"
#include "models/lora_adapters.h"
#include "train/run_log.h"
#include "models/gpt_lora.h"
#include "models/llama_lora.h"
#include "nn/init.h"
#include "nn/serialize.h"

namespace tg::train {

namespace {

// Every weight, adapter and optimizer state read back must be finite: one inf or nan makes every
// output nan (the error names the file, the tensor and the index).
const SafetensorsReadOptions kFiniteOnly{.finite_only = true};
// A classifier's body in tapegrad's layout: its file holds the head's score.weight beside it
// (read by models::load_score_weight).
const SafetensorsReadOptions kClassifierBody{.finite_only = true,
                                             .skip = [](const std::string& name) { return name == models::kScoreWeight; }};

std::string to_hex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<uint8_t> from_hex(const std::string& text, const std::string& where) {
  if (text.size() % 2) throw Error(where + ": odd number of hex digits");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); i += 2) {
    unsigned v = 0;
    if (std::sscanf(text.substr(i, 2).c_str(), "%2x", &v) != 1)
      throw Error(where + ": not hex at digit " + std::to_string(i));
    out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

std::string metadata_value(const SafetensorsMetadata& metadata, const std::string& key, const std::string& file) {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  throw Error(file + ": metadata \"" + key + "\" is missing: not a train_gpt checkpoint");
}

int64_t parse_step(const std::string& text, const std::string& file) {
  const std::optional<int64_t> step = read_integer(text);
  if (!step || *step < 0) throw Error(file + ": metadata \"step\" is not a step number: \"" + text + "\"");
  return *step;
}

// A flag's value as a member of w: numbers that read back exactly (saved_options gives their
// text to the flag again), strings quoted.
void add_flag(json::Writer& w, const Flag& f) {
  if (auto* p = std::get_if<int64_t*>(&f.value)) w.field(f.name, **p);
  else if (auto* p = std::get_if<double*>(&f.value)) w.field(f.name, **p);
  else if (auto* p = std::get_if<bool*>(&f.value)) w.field(f.name, **p);
  else w.field(f.name, *std::get<std::string*>(f.value));
}

// {"model": {...}, "train": {...}, "kernels": ...}, a member per line, model and train on one line each.
// A llama or qwen3 run has no "model": its config.json's Hugging Face fields are the model.
std::string config_json(const models::GPTConfig& c, TrainOptions options, bool gpt) {
  json::Writer model;
  model.field("vocab_size", c.vocab_size).field("context_length", c.context_length).field("emb_dim", c.emb_dim)
      .field("n_heads", c.n_heads).field("n_layers", c.n_layers).field("drop_rate", c.drop_rate)
      .field("qkv_bias", c.qkv_bias).field("tie_weights", c.tie_weights).field("layer_norm_eps", c.layer_norm_eps);
  json::Writer train;
  for (const Flag& f : option_fields(options)) add_flag(train, f);
  json::Writer config(json::Layout::Pretty);
  if (gpt) config.field("model", model);
  config.field("train", train).field("kernels", kernels_mode());
  return config.str();
}

models::GPTConfig model_config(const json::Value& m) {
  models::GPTConfig c;
  c.vocab_size = m["vocab_size"].as_int64();
  c.context_length = m["context_length"].as_int64();
  c.emb_dim = m["emb_dim"].as_int64();
  c.n_heads = m["n_heads"].as_int64();
  c.n_layers = m["n_layers"].as_int64();
  c.drop_rate = m["drop_rate"].as_double();
  c.qkv_bias = m["qkv_bias"].as_bool();
  c.tie_weights = m.contains("tie_weights") && m["tie_weights"].as_bool();  // runs from before tying have none
  c.layer_norm_eps = m.contains("layer_norm_eps") ? m["layer_norm_eps"].as_double() : 1e-5;  // older runs: 1e-5
  c.validate();
  return c;
}

// A train_gpt model.safetensors's header (no data read) against the config a model is about to be
// built from: the tensors that carry its sizes, tok_emb.weight (V, C) and pos_emb.weight (P, C),
// and the blocks' count, so that a config.json that disagrees with the file is refused before the
// model takes any memory (load() checks every name, shape and dtype once it is built).
void check_run_weights(const models::GPTConfig& c, const std::string& path) {
  const std::vector<SafetensorsEntry> file = safetensors_entries(path);
  const std::pair<std::string, Shape> sized[] = {{"tok_emb.weight", {c.vocab_size, c.emb_dim}},
                                                 {"pos_emb.weight", {c.context_length, c.emb_dim}}};
  for (const auto& sized_tensor : sized) {  // (no structured binding: a lambda below uses the name)
    const std::string& name = sized_tensor.first;
    const Shape& shape = sized_tensor.second;
    const auto e = std::find_if(file.begin(), file.end(), [&](const SafetensorsEntry& f) { return f.name == name; });
    if (e == file.end()) throw Error(path + ": tensor \"" + name + "\" is missing");
    if (e->shape != shape)
      throw Error(path + ": tensor \"" + name + "\" has shape " + shape_str(e->shape) + ", expected " + shape_str(shape) +
                  " (vocab_size, context_length and emb_dim of the run's config.json)");
  }
  // (no more blocks than tensors, whatever block number a name claims)
  if (const int64_t blocks = std::min<int64_t>(models::blocks_in_file(file, "trf_blocks."), std::ssize(file));
      blocks < c.n_layers)
    throw Error(path + ": tensor \"trf_blocks." + std::to_string(blocks) + ".norm1.weight\" is missing (the run's " +
                "config.json has n_layers " + std::to_string(c.n_layers) + "; the file has " + std::to_string(blocks) +
                " blocks)");
}

// A message about flags with each "--name" written as the config.json field it came from:
// --kv-heads -> "train.kv-heads" (section "train."); the flags in keep (given on this command
// line) stay flags. A "--" inside a word (a path's "my--run") is no flag.
std::string flags_as_fields(const std::string& message, const std::string& section,
                            const std::vector<std::string>& keep = {}) {
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    const bool after_word = i > 0 && message[i - 1] != ' ' && message[i - 1] != '(' && message[i - 1] != '"';
    const bool flag = !after_word && message.compare(i, 2, "--") == 0 && i + 2 < message.size() &&
                      std::islower(static_cast<unsigned char>(message[i + 2]));
    if (!flag) {
      out += message[i];
      continue;
    }
    size_t end = i + 2;
    while (end < message.size() && (std::islower(static_cast<unsigned char>(message[end])) || message[end] == '-')) ++end;
    const std::string name = message.substr(i + 2, end - i - 2);
    out += std::find(keep.begin(), keep.end(), name) != keep.end() ? "--" + name : "\"" + section + name + "\"";
    i = end - 1;
  }
  return out;
}

// A Llama / Qwen run from scratch is rebuilt from its flags (config.json's "tapegrad.train"); the
// model config.json describes beside them must be that one. One that is not was edited, or is a
// fine-tune whose "init-from" was lost (a fine-tune's model is its config.json's, not the flags').
void check_same_model(const models::LlamaConfig& in_file, const models::LlamaConfig& made, const std::string& path) {
  auto n = [](int64_t v) { return std::to_string(v); };
  auto x = [](double v) { return nn::python_float(v); };
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  const std::array<std::array<std::string, 3>, 14> fields{{
      {"model_type", in_file.model_type, made.model_type},
      {"vocab_size", n(in_file.vocab_size), n(made.vocab_size)},
      {"hidden_size", n(in_file.hidden_size), n(made.hidden_size)},
      {"intermediate_size", n(in_file.intermediate_size), n(made.intermediate_size)},
      {"num_hidden_layers", n(in_file.num_hidden_layers), n(made.num_hidden_layers)},
      {"num_attention_heads", n(in_file.num_attention_heads), n(made.num_attention_heads)},
      {"num_key_value_heads", n(in_file.num_key_value_heads), n(made.num_key_value_heads)},
      {"head_dim", n(in_file.head_dim), n(made.head_dim)},
      {"max_position_embeddings", n(in_file.max_position_embeddings), n(made.max_position_embeddings)},
      {"rms_norm_eps", x(in_file.rms_norm_eps), x(made.rms_norm_eps)},
      {"rope_theta", x(in_file.rope_theta), x(made.rope_theta)},
      {"rope_scaling", in_file.rope_scaling.rope_type, made.rope_scaling.rope_type},
      {"tie_word_embeddings", b(in_file.tie_word_embeddings), b(made.tie_word_embeddings)},
      {"attention_bias", b(in_file.qkv_bias || in_file.o_bias), b(made.qkv_bias || made.o_bias)}}};
  for (const auto& [name, file_value, flags_value] : fields) {
    if (file_value == flags_value) continue;
    throw Error(path + ": " + name + " is " + file_value + ", but the run's \"tapegrad.train\" fields make a model " +
                "with " + flags_value + ": a run from scratch (its \"init-from\" is empty) is rebuilt from them; a " +
                "fine-tune names the folder it started from in \"tapegrad.train.init-from\"");
  }
}

// config.json's train_gpt part: the whole file, or its "tapegrad" member in a run from GPT-2
// (whose config.json is Hugging Face's).
const json::Value& run_section(const json::Value& doc) {
  const json::Value* section = doc.is_object() ? doc.find(models::kTapegradSection) : nullptr;
  return section ? *section : doc;
}

}  // namespace

bool is_lora_run(const std::string& dir) { return std::filesystem::exists(path_in(dir, models::kAdapterConfigFile)); }

namespace {

// The trained weights' file: the whole model's, or a LoRA run's adapters.
std::string weights_file(const std::string& dir) { return is_lora_run(dir) ? models::kAdaptersFile : "model.safetensors"; }

// A LoRA run's adapter_config.json: its base folder checked to be there, and its target_modules
// to be of the run's model (a Llama's config.json beside GPT-2's adapters is no run).
models::AdapterConfig adapters_of(const std::string& dir) {
  const std::string path = path_in(dir, models::kAdapterConfigFile);
  models::AdapterConfig adapters = models::read_adapter_config(path);
  const models::LoraFamily model = models::is_hf_llama_folder(dir) ? models::LoraFamily::llama : models::LoraFamily::gpt2;
  if (adapters.family != model)
    throw Error(path + ": \"target_modules\" are " + models::family_name(adapters.family) + "'s but the run's config.json is a " +
                models::family_name(model) + " model's: not a consistent run");
  if (!std::filesystem::is_directory(adapters.base))
    throw Error(path + ": the base model " + adapters.base + " (base_model_name_or_path) is gone: the run holds its "
                "adapters alone; put the base model's folder back there");
  return adapters;
}

}  // namespace

void check_run_folder(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  for (const std::string& name : {weights_file(dir), std::string("optimizer.safetensors"), std::string("config.json"),
                                  std::string("tokenizer.json")})
    if (!std::filesystem::exists(path_in(dir, name)))
      throw Error(dir + ": not a train_gpt checkpoint folder (" + name + " is missing)");
}

// Keep path's current version as path.prev (a hard link, or a copy where links do not work),
// replacing the older .prev in one rename.
void keep_previous_version(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  const std::string prev = path + ".prev", staging = path + ".prev.tmp";
  std::filesystem::remove(staging, ec);
  std::filesystem::create_hard_link(path, staging, ec);
  if (ec) std::filesystem::copy_file(path, staging, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(staging, prev, ec);
  if (ec) throw Error("train_gpt: " + path + ": cannot keep the previous version as " + prev + ": " + ec.message());
}

namespace {

// What saves killed half-way leave in a run folder: AtomicFile's temporary files of the folder's
// files ("<file>.tmp-" and 8 hex digits) and keep_previous_version's staged links (.prev.tmp,
// another name of a file still there). Only those names are removed; the next save removes
// them too, each AtomicFile its own.
void remove_killed_saves(const std::string& dir) {
  for (const char* name : {"model.safetensors", models::kAdaptersFile, "optimizer.safetensors", "config.json",
                           models::kAdapterConfigFile, "tokenizer.json", "vocab.json", "merges.txt", "loss.csv", "loss.svg",
                           "samples.txt", "summary.json"})
    remove_stale_temporaries(path_in(dir, name));
  std::error_code ec;
  for (const char* name : {"model.safetensors", models::kAdaptersFile, "optimizer.safetensors"})
    std::filesystem::remove(path_in(dir, name) + ".prev.tmp", ec);
}

}  // namespace

void save_run(Trainer& trainer, const std::string& dir) {
  const std::string step = std::to_string(trainer.step());
  std::vector<AtomicFile> files;
  const models::AdapterConfig* lora = trainer.lora();  // a LoRA run saves its adapters alone, in peft's names
  const models::HfGpt2Info* hf = lora ? nullptr : trainer.hf_gpt2_layout();  // a run from GPT-2: its layout and names
  const models::LlamaConfig* llama = trainer.llama_config();  // a llama or qwen3 run: Hugging Face's layout
  const std::string weights_path = path_in(dir, lora ? models::kAdaptersFile : "model.safetensors");
  NamedTensors weights = lora    ? models::peft_adapter_tensors(trainer.model())
                         : hf    ? models::hf_gpt2_tensors(trainer.gpt(), hf->prefixed)
                         : llama ? models::hf_llama_tensors(trainer.llama())
                                 : trainer.model().state_dict();
  models::ModelForSequenceClassification* classifier = trainer.classifier();
  if (classifier)  // beside the body's weights (a LoRA run's: beside the adapters, as peft's modules_to_save)
    weights.emplace_back(lora ? models::kPeftScoreWeight : models::kScoreWeight, classifier->score->weight.detach());
  const NamedTensors optimizer_state = trainer.optimizer().state_dict();
  try {  // a non-finite checkpoint would replace the last good one, and could not be resumed
    check_finite(weights, weights_path);
    check_finite(optimizer_state, path_in(dir, "optimizer.safetensors"));
  } catch (const Error& e) {
    throw Error("step " + step + ": the checkpoint is not saved: " + e.what() + "; the files in " + dir +
                " are left as they were");
  }
  files.emplace_back(weights_path, "train_gpt");
  save_safetensors(files.back(), weights, {{"format", "pt"}, {"step", step}});
  files.emplace_back(path_in(dir, "optimizer.safetensors"), "train_gpt");
  save_safetensors(files.back(), optimizer_state,
                   {{"step", step},
                    {"default_generator", to_hex(default_generator().get_state())},
                    {"batch_generator", to_hex(trainer.batch_generator().get_state())}});
  files.emplace_back(path_in(dir, "config.json"), "train_gpt");
  const std::string run_config = config_json(trainer.config(), trainer.options(), !llama);
  std::string config = hf      ? models::hf_gpt2_config_json(trainer.config(), hf->config, run_config)
                       : llama ? models::hf_llama_config_json(*llama, trainer.hf_llama_source(), run_config)
                               : run_config + "\n";
  if (classifier) {  // a *ForSequenceClassification folder: its classes and padding id
    const std::string architecture =
        std::string(llama                                                              ? llama->class_prefix()
                    : trainer.hf_gpt2_layout() || (lora && lora->family == models::LoraFamily::gpt2) ? "GPT2"
                                                                                                     : "GPT") +
        "ForSequenceClassification";
    const models::ClassifierConfig classes{trainer.classification()->classes, trainer.classification()->pad_id};
    const json::Value fields = json::parse(models::classifier_config_json(classes, architecture), "classifier fields");
    config = models::merged_config_json(json::parse(config, "config.json"), fields, [](const std::string&) { return false; },
                                        hf || llama ? run_config : "");
  }
  files.back().write(config);
  if (lora) {
    files.emplace_back(path_in(dir, models::kAdapterConfigFile), "train_gpt");
    files.back().write(models::adapter_config_json(*lora));
  }
  // The tokenizer does not change within a run: tokenizer.json (and GPT-2's vocab.json and
  // merges.txt), each written atomically, before the files that make the folder a checkpoint.
  trainer.tokenizer().save(dir);
  for (AtomicFile& f : files) f.prepare();  // everything on disk under temporary names
  for (size_t i = 2; i < files.size(); ++i) files[i].commit();  // nor do the configs
  keep_previous_version(files[0].target());  // a pair of the same step survives any interruption
  keep_previous_version(files[1].target());
  files[1].commit();
  files[0].commit();
  std::error_code ec;  // a full run written over a LoRA run's folder is no LoRA run
  if (!lora) std::filesystem::remove(path_in(dir, models::kAdapterConfigFile), ec);
}

namespace {

// The newest model/optimizer files of the same step among the current ones and the .prev ones.
struct FilePair {
  std::string model, optimizer, step;
};
FilePair newest_consistent_pair(const std::string& dir) {
  const std::string model = path_in(dir, weights_file(dir)), opt = path_in(dir, "optimizer.safetensors");
  auto step_of = [](const std::string& path) -> std::optional<int64_t> {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    return parse_step(metadata_value(load_safetensors_metadata(path), "step", path), path);
  };
  std::optional<FilePair> best;
  int64_t best_step = -1;
  for (const std::string& m : {model, model + ".prev"}) {
    for (const std::string& o : {opt, opt + ".prev"}) {
      const std::optional<int64_t> sm = step_of(m), so = step_of(o);
      if (sm && so && *sm == *so && *sm > best_step) {
        best = FilePair{m, o, std::to_string(*sm)};
        best_step = *sm;
      }
    }
  }
  if (!best) {
    throw Error(dir + ": " + weights_file(dir) + " (step " + metadata_value(load_safetensors_metadata(model), "step", model) +
                ") and optimizer.safetensors (step " + metadata_value(load_safetensors_metadata(opt), "step", opt) +
                ") are of different steps and no earlier pair matches: the checkpoint is inconsistent");
  }
  return *best;
}

}  // namespace

TrainOptions saved_options(const std::string& dir) {
  check_run_folder(dir);
  const std::string path = path_in(dir, "config.json");
  const json::Value doc = json::parse(read_user_file(path), path);
  TrainOptions o;
  std::vector<std::string> args;
  for (const json::Member& m : run_section(doc)["train"].as_object()) {
    if (m.value.is_bool()) {  // a switch: given when true
      if (m.value.as_bool()) args.push_back("--" + m.key);
      continue;
    }
    args.push_back("--" + m.key);
    args.push_back(m.value.is_string() ? m.value.as_string() : m.value.number_text());
  }
  // Values out of range, and the model's shape checked as a new run's flags are, named as the
  // fields of the file they came from: they were never given as flags (an edited config.json, say).
  const std::string section = std::string(doc.contains(models::kTapegradSection) ? "tapegrad." : "") + "train.";
  bool help = false;
  try {
    parse_flags(option_fields(o), args, &help);
    if (o.arch != "gpt2" && o.init_from.empty()) llama_config(o, 1);
  } catch (const Error& e) {
    throw Error(path + ": " + flags_as_fields(e.what(), section));
  }
  return o;
}

std::optional<std::string> naming_saved_fields(const std::string& message, const std::string& dir,
                                               const std::vector<std::string>& given) {
  const std::string config_path = path_in(dir, "config.json");
  std::string section = "train.";
  try {
    if (json::parse(read_user_file(config_path), config_path).contains(models::kTapegradSection)) section = "tapegrad.train.";
  } catch (const Error&) {  // the file itself is the problem: the message says so already
    return std::nullopt;
  }
  const std::string named = flags_as_fields(message, section, given);
  if (named == message) return std::nullopt;
  return named.starts_with(config_path) ? named : config_path + ": " + named;
}

std::unique_ptr<Trainer> start_from_gpt2_folder(TrainOptions o, const std::string& text,
                                                std::vector<std::string>* converted) {
  const std::string config_path = path_in(o.init_from, "config.json");
  if (!models::is_hf_gpt2_folder(o.init_from))
    throw Error("--init-from " + o.init_from + ": not a Hugging Face GPT-2 folder (" + config_path +
                " with \"model_type\": \"gpt2\" is missing)");
  models::HfGpt2Info layout;  // what the run keeps of the folder to save in its layout
  layout.config = json::parse_file(config_path);
  models::GPTConfig config = models::hf_gpt2_config(layout.config, config_path);
  config.drop_rate = o.model.drop_rate;
  const int64_t context = o.model.context_length;
  o.model = config;  // the flags say the model's shape, as a run from scratch saves them
  o.model.context_length = context;
  const std::string weights_path = path_in(o.init_from, "model.safetensors");
  models::check_hf_gpt2_weights(config, weights_path, &layout);  // before the model takes any memory
  const Activity building("building the model of " + config_path);
  auto trainer = std::make_unique<Trainer>(o, text, tokenizers::load_tokenizer(o.tokenizer), config);
  models::load_hf_gpt2_weights(trainer->gpt(), weights_path, &layout);
  if (converted) *converted = layout.converted_dtypes;
  if (is_classification(o)) layout.prefixed = true;  // GPT2ForSequenceClassification's names: transformer.*
  trainer->set_hf_gpt2_layout(layout);
  // LoRA: the folder stays the base, named by its absolute path in the run's adapter_config.json
  if (o.lora_rank > 0) trainer->apply_lora(std::filesystem::absolute(o.init_from).lexically_normal().string());
  return trainer;
}

std::unique_ptr<Trainer> start_from_llama_folder(TrainOptions o, const std::string& text,
                                                 std::vector<std::string>* converted) {
  const std::string config_path = path_in(o.init_from, "config.json");
  if (!models::is_hf_llama_folder(o.init_from))
    throw Error("--init-from " + o.init_from + ": not a Hugging Face Llama / Qwen folder (" + config_path +
                " with \"model_type\" llama, qwen2 or qwen3 is missing)");
  json::Value source = json::parse_file(config_path);
  const models::LlamaConfig config = models::hf_llama_config(source, config_path);
  o.arch = config.model_type == "qwen2" || config.model_type == "qwen3" ? config.model_type : "llama";
  o.model.emb_dim = config.hidden_size;  // the flags say the model's shape, as a run from scratch saves them
  o.model.n_heads = config.num_attention_heads;
  o.model.n_layers = config.num_hidden_layers;
  o.model.tie_weights = config.tie_word_embeddings;
  o.kv_heads = config.num_key_value_heads;
  models::LlamaConfig run_config = config;
  run_config.attention_dropout = o.model.drop_rate;  // --dropout: the run's
  // before the model takes any memory
  if (models::check_hf_llama_weights(config, o.init_from).lm_head_missing && o.task != "classify")
    throw Error("--init-from " + o.init_from + ": a classifier without lm_head.weight (its body and score.weight): it has "
                "no head to write text with; fine-tune it with --task classify, or start from the model it was made from");
  std::unique_ptr<Trainer> trainer;
  {
    const Activity building("building the model of " + config_path);
    trainer = std::make_unique<Trainer>(o, text, tokenizers::load_tokenizer(o.tokenizer), run_config);
  }
  const Activity reading("reading the weights of " + o.init_from);
  const models::HfLlamaInfo read = models::load_hf_llama_weights(trainer->llama(), o.init_from);  // checked first
  if (converted) *converted = read.converted_dtypes;
  trainer->set_hf_llama_source(std::move(source));
  // LoRA: the folder stays the base, named by its absolute path in the run's adapter_config.json
  if (o.lora_rank > 0) trainer->apply_lora(std::filesystem::absolute(o.init_from).lexically_normal().string());
  return trainer;
}

std::unique_ptr<Trainer> resume_trainer(const std::string& dir, const TrainOptions& options, const std::string& text) {
  check_run_folder(dir);
  remove_killed_saves(dir);
  const bool llama = models::is_hf_llama_folder(dir);  // a llama or qwen3 run (Hugging Face's layout)
  const bool lora = is_lora_run(dir), from_gpt2 = !llama && (lora || models::is_hf_gpt2_folder(dir));
  if (llama != (options.arch != "gpt2"))
    throw Error(dir + ": config.json's \"arch\" is " + options.arch + " but its model_type is " +
                (llama ? "of the Llama family" : "not") + ": not a consistent run");
  const std::string config_path = path_in(dir, "config.json");
  const json::Value config = json::parse(read_user_file(config_path), config_path);
  if (lora != (options.lora_rank > 0))
    throw Error(dir + ": config.json's \"lora-rank\" is " + std::to_string(options.lora_rank) + " but " +
                models::kAdapterConfigFile + " is " + (lora ? "there" : "missing") + ": not a consistent run");
  const auto [model_path, opt_path, step] = newest_consistent_pair(dir);
  const SafetensorsMetadata opt_meta = load_safetensors_metadata(opt_path);
  const std::vector<uint8_t> dropout_state =
      from_hex(metadata_value(opt_meta, "default_generator", opt_path), opt_path);
  const std::vector<uint8_t> batch_state = from_hex(metadata_value(opt_meta, "batch_generator", opt_path), opt_path);

  // The weights files' headers against the config first: nothing is built until they agree.
  std::unique_ptr<Trainer> trainer;
  std::optional<models::AdapterConfig> adapters;
  models::HfGpt2Info layout;  // a run from GPT-2: its layout and names
  layout.config = config;
  if (from_gpt2) {  // a run from GPT-2: its tokenizer (the files beside the model) and shape are its own
    const models::GPTConfig model = model_config(run_section(config)["model"]);
    if (lora) {  // the base model's weights, then the adapters
      adapters = adapters_of(dir);
      models::HfGpt2Info base;
      models::check_hf_gpt2_weights(model, path_in(adapters->base, "model.safetensors"), &base);
      models::check_peft_adapters(model_path, model, adapters->lora);
    } else {
      models::check_hf_gpt2_weights(model, model_path, &layout);
    }
    const Activity building("building the model of " + config_path);
    trainer = std::make_unique<Trainer>(options, text, tokenizers::load_tokenizer(dir), model);
  } else if (llama && (lora || !options.init_from.empty())) {  // from a Llama / Qwen folder: config.json is its model
    models::LlamaConfig model = models::hf_llama_config(config, config_path);
    model.attention_dropout = options.model.drop_rate;
    if (lora) {  // the base model's weights, then the adapters
      adapters = adapters_of(dir);
      models::check_hf_llama_weights(model, adapters->base);
      models::check_peft_adapters(model_path, model, adapters->lora);
    } else {
      models::check_hf_llama_weights(model, model_path);
    }
    const Activity building("building the model of " + config_path);
    trainer = std::make_unique<Trainer>(options, text, tokenizers::load_tokenizer(dir), model);
    trainer->set_hf_llama_source(config);
  } else {  // a run from scratch: the Trainer makes its model from the flags, as it did
    const std::string tokenizer_path = path_in(dir, "tokenizer.json");
    const tokenizers::Tokenizer saved = tokenizers::Tokenizer::from_json(read_user_file(tokenizer_path), tokenizer_path);
    // char and bpe are learned from --data again, and must come out as saved: the same data; a
    // tokenizer from a file is the run's own copy (the file it came from may be gone)
    const bool learned = options.tokenizer == "char" || options.tokenizer == "bpe";
    if (learned && is_example_data(options) && saved.end_of_text_id() < 0)
      throw Error(tokenizer_path + ": the run was made before tapegrad gave a tokenizer learned from instruction or "
                  "chat data an end-of-text token (its model never learned to stop): it cannot be resumed; train it "
                  "again");
    if (learned && options.tokenizer != saved.type())
      throw Error(config_path + ": \"" + (config.contains(models::kTapegradSection) ? "tapegrad." : "") +
                  "train.tokenizer\" is " + options.tokenizer + ", but " + tokenizer_path + " is a " + saved.type() +
                  " tokenizer: not a consistent run");
    models::GPTConfig model = options.model;  // as the Trainer makes it: the flags' shape, the tokenizer's vocabulary
    model.vocab_size = saved.vocab_size();
    if (llama) {
      const models::LlamaConfig made = llama_config(options, model.vocab_size);
      check_same_model(models::hf_llama_config(config, config_path), made, config_path);
      models::check_hf_llama_weights(made, model_path);
    } else {
      check_run_weights(model, model_path);
    }
    const Activity building("building the model of " + config_path);
    if (!learned) {
      trainer = std::make_unique<Trainer>(options, text, saved, models::GPTConfig{});
    } else {
      trainer = std::make_unique<Trainer>(options, text);
    }
    if (learned && saved.to_json() != trainer->tokenizer().to_json())
      throw Error(tokenizer_path + ": the tokenizer made from this --data (its " +
                  (trainer->tokenizer().type() == std::string("char") ? std::string("characters") : std::string("BPE merges")) +
                  ") differs from the checkpoint's: resume with the same --data");
  }

  const Activity reading("reading the weights of " + dir);
  if (lora) {
    if (llama) {
      models::load_hf_llama_weights(trainer->llama(), adapters->base);
    } else {
      models::HfGpt2Info base;
      models::load_hf_gpt2_weights(trainer->gpt(), path_in(adapters->base, "model.safetensors"), &base);
    }
    trainer->apply_lora(adapters->base);
    models::load_peft_adapters(trainer->model(), model_path);  // all or nothing
  } else if (from_gpt2) {
    models::load_hf_gpt2_weights(trainer->gpt(), model_path, &layout);  // all or nothing
    trainer->set_hf_gpt2_layout(layout);
  } else if (llama) {
    models::load_hf_llama_weights(trainer->llama(), model_path);  // checks every name, shape and value
  } else {
    // checks every name, shape, dtype and value; all or nothing
    load(trainer->model(), model_path, trainer->classifier() ? kClassifierBody : kFiniteOnly);
  }
  if (models::ModelForSequenceClassification* classifier = trainer->classifier())
    models::load_score_weight(*classifier, model_path, lora ? models::kPeftScoreWeight : models::kScoreWeight);
  const NamedTensors opt_state = load_safetensors(opt_path, kFiniteOnly);  // nan moments would make nan weights
  try {
    trainer->optimizer().load_state(opt_state);
  } catch (const Error& e) {
    throw Error(opt_path + ": " + e.what());
  }
  default_generator().set_state(dropout_state);
  trainer->batch_generator().set_state(batch_state);
  trainer->set_step(parse_step(step, model_path));
  return trainer;
}

std::string write_text(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer, const std::vector<int64_t>& prompt,
                       int64_t tokens, const models::SamplingOptions& options, Generator& gen, std::ostream* stream,
                       std::vector<int64_t>* ids_out) {
  const Tensor idx = from_vector(prompt, {1, static_cast<int64_t>(prompt.size())});  // (1, T)
  // streamed: each token's text as it comes (a token's bytes: decode is byte for byte), whole
  // characters only, the rest held back until they are whole; the end-of-text is never printed
  std::string pending = stream ? tokenizer.decode(prompt) : std::string();
  bool ended = false;
  auto print_whole = [&](size_t keep_back) {
    const size_t n = pending.size() - keep_back;
    stream->write(pending.data(), static_cast<std::streamsize>(n)).flush();
    pending.erase(0, n);
  };
  auto on_token = [&](const Tensor& next) {  // (1,1)
    const int64_t id = next.item<int64_t>();
    ended = ended || id == options.stop_token;
    if (ended) return;
    pending += tokenizer.decode({id});
    print_whole(pending.size() - json::utf8_whole_prefix(pending));
  };
  if (stream) print_whole(pending.size() - json::utf8_whole_prefix(pending));
  models::SamplingOptions writable = options;  // only ids the tokenizer decodes (a padded vocabulary's are not)
  writable.suppress_tokens = models::ids_the_tokenizer_cannot_write(tokenizer, model.vocab_size());
  std::vector<int64_t> ids =
      models::generate(model, idx, tokens, writable, &gen, stream ? std::function<void(const Tensor&)>(on_token) : nullptr)
          .tolist<int64_t>();
  if (stream) print_whole(0);
  if (options.stop_token >= 0) {  // generation stopped at it: cut it off
    const auto stop = std::find(ids.begin() + static_cast<std::ptrdiff_t>(prompt.size()), ids.end(), options.stop_token);
    ids.erase(stop, ids.end());
  }
  if (ids_out) *ids_out = ids;
  return tokenizer.decode(ids);
}

namespace {

// config.json's eos_token_id when it is one number (a list, as Llama 3 instruct's, is no single
// stop token: -1, none).
int64_t single_eos_id(const json::Value& config) {
  const json::Value* eos = config.is_object() ? config.find("eos_token_id") : nullptr;
  return eos && eos->is_number() ? eos->as_int64() : -1;
}

// The LoRA run dir's adapters added to base, its base model (a GPTModel or a LlamaForCausalLM of
// config): the adapters file checked against config first, before the adapters take memory; the
// default generator is left as it was (A's draws are overwritten by the file's).
template <class Model, class Config>
void add_run_adapters(Model& base, const Config& config, const models::AdapterConfig& adapters, const std::string& dir) {
  const std::string adapters_path = path_in(dir, models::kAdaptersFile);
  models::check_peft_adapters(adapters_path, config, adapters.lora);
  const Activity adding("adding the LoRA adapters of " + path_in(dir, models::kAdapterConfigFile));
  const std::vector<uint8_t> generator = default_generator().get_state();
  models::apply_lora(base, adapters.lora);
  default_generator().set_state(generator);
  models::load_peft_adapters(base, adapters_path);
}

// A LoRA run's config.json (beside its adapters) names a *ForSequenceClassification model.
bool lora_run_is_classifier(const std::string& dir) {
  const std::string config_path = path_in(dir, "config.json");
  return std::filesystem::exists(config_path) &&
         models::is_classifier_config(json::parse(read_user_file(config_path), config_path));
}

// load_saved_model's folder, a classifier's body without its output head included (lm_head_missing).
SavedModel load_saved_body(const std::string& dir, bool* lm_head_missing) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  SavedModel saved;
  // config.json read once, first: what it is decides the reader (or is the error, naming the file)
  const models::ModelFolderKind kind = models::model_folder_kind(dir);
  if (is_lora_run(dir) && kind == models::ModelFolderKind::llama) {  // the base Llama / Qwen folder's model and the adapters
    const models::AdapterConfig adapters = adapters_of(dir);
    models::HfLlama base = models::load_hf_llama(adapters.base);
    saved.stop_token = single_eos_id(base.info.config);
    *lm_head_missing = base.info.lm_head_missing;
    saved.classifier = lora_run_is_classifier(dir);
    saved.converted_dtypes = base.info.converted_dtypes;
    add_run_adapters(*base.model, base.config, adapters, dir);
    saved.model = std::move(base.model);
    if (std::filesystem::exists(path_in(dir, "tokenizer.json"))) saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else if (is_lora_run(dir)) {  // the base GPT-2 folder's model with the run's adapters
    const models::AdapterConfig adapters = adapters_of(dir);
    models::HfGpt2 base = models::load_hf_gpt2(adapters.base);
    saved.config = base.config;
    saved.classifier = lora_run_is_classifier(dir);
    saved.converted_dtypes = base.info.converted_dtypes;
    saved.base_layout = base.info;
    add_run_adapters(*base.model, saved.config, adapters, dir);
    saved.model = std::move(base.model);
    saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else if (kind == models::ModelFolderKind::llama) {  // a Llama / Qwen folder, or a llama or qwen3 run
    models::HfLlama hf = models::load_hf_llama(dir);
    saved.stop_token = single_eos_id(hf.info.config);
    *lm_head_missing = hf.info.lm_head_missing;
    saved.classifier = models::is_classifier_config(hf.info.config);
    saved.model = std::move(hf.model);
    saved.converted_dtypes = hf.info.converted_dtypes;
    if (std::filesystem::exists(path_in(dir, "tokenizer.json"))) saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else if (kind == models::ModelFolderKind::gpt2) {  // Hugging Face's layout (a GPT-2 folder, or a run from one)
    models::HfGpt2 hf = models::load_hf_gpt2(dir);
    saved.config = hf.config;
    saved.classifier = models::is_classifier_config(hf.info.config);
    saved.model = std::move(hf.model);
    saved.converted_dtypes = hf.info.converted_dtypes;
    saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else {
    const bool has_weights = std::filesystem::exists(path_in(dir, "model.safetensors")) ||
                             std::filesystem::exists(path_in(dir, "model.safetensors.index.json"));
    if (kind == models::ModelFolderKind::none && has_weights)  // weights, sharded or not, and nothing to say what
      throw Error(dir + ": not a model folder (config.json is missing)");
    for (const char* name : {"model.safetensors", "config.json", "tokenizer.json"})
      if (!std::filesystem::exists(path_in(dir, name)))
        throw Error(dir + ": not a model folder (" + std::string(name) + " is missing)");
    const std::string config_path = path_in(dir, "config.json"), tokenizer_path = path_in(dir, "tokenizer.json");
    const std::string weights_path = path_in(dir, "model.safetensors");
    json::Value config;
    try {
      config = json::parse(read_user_file(config_path), config_path);
      saved.config = model_config(config["model"]);
    } catch (const Error& e) {
      throw Error(config_path + ": " + e.what());
    }
    saved.tokenizer = tokenizers::Tokenizer::from_json(read_user_file(tokenizer_path), tokenizer_path);
    check_run_weights(saved.config, weights_path);  // before the model takes any memory
    const Activity building("building the model of " + config_path);
    std::unique_ptr<models::GPTModel> model;
    {
      const nn::init::SkipInitGuard no_draws;  // every weight is read next (load is strict: all are in the file)
      model = std::make_unique<models::GPTModel>(saved.config);
    }
    saved.classifier = models::is_classifier_config(config);
    load(*model, weights_path, saved.classifier ? kClassifierBody : kFiniteOnly);
    saved.model = std::move(model);
  }
  if (saved.tokenizer) {
    if (saved.tokenizer->end_of_text_id() >= 0) saved.stop_token = saved.tokenizer->end_of_text_id();
    // a model may have more ids than its tokenizer (a vocabulary padded to a round size), not fewer
    if (saved.tokenizer->vocab_size() > saved.model->vocab_size())
      throw Error(dir + ": the tokenizer's largest id is " + std::to_string(saved.tokenizer->vocab_size() - 1) +
                  " but config.json's vocab_size is " + std::to_string(saved.model->vocab_size()) + " (ids 0 to " +
                  std::to_string(saved.model->vocab_size() - 1) + ")");
  }
  saved.model->eval();
  return saved;
}

}  // namespace

SavedModel load_saved_model(const std::string& dir) {
  bool lm_head_missing = false;
  SavedModel saved = load_saved_body(dir, &lm_head_missing);
  if (lm_head_missing)
    throw Error(dir + ": a classifier without lm_head.weight (a Hugging Face Llama / Qwen classifier keeps its body and "
                      "score.weight): it writes and scores no text; give it to generate --classify or evaluate --task classify");
  return saved;
}

const tokenizers::Tokenizer& SavedModel::the_tokenizer(const std::string& dir) const {
  if (!tokenizer) throw Error(dir + ": no tokenizer.json beside the model: give token ids (--prompt-ids), not text");
  return *tokenizer;
}

SavedClassifier load_saved_classifier(const std::string& dir) {
  const std::string config_path = path_in(dir, "config.json");
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  if (!std::filesystem::exists(config_path)) throw Error(dir + ": not a model folder (config.json is missing)");
  const json::Value config = json::parse(read_user_file(config_path), config_path);
  if (!models::is_classifier_config(config))
    throw Error(config_path + ": \"architectures\" names no *ForSequenceClassification model: " + dir +
                " is not a classifier (train one with train_gpt --task classify)");
  SavedClassifier out;
  out.config = models::read_classifier_config(config, config_path);  // before the body takes any memory
  bool lm_head_missing = false;  // the body's own head is not read here
  SavedModel saved = load_saved_body(dir, &lm_head_missing);  // score.weight passed over, or the error naming the folder
  out.tokenizer = saved.tokenizer;
  // the head's weight: in model.safetensors, or the shard the index puts it in, or a LoRA run's adapters file
  const bool lora = is_lora_run(dir);
  std::string weights = path_in(dir, lora ? models::kAdaptersFile : "model.safetensors");
  if (!std::filesystem::exists(weights) && std::filesystem::exists(path_in(dir, "model.safetensors.index.json"))) {
    const std::string index_path = path_in(dir, "model.safetensors.index.json");
    const json::Value index = json::parse(read_user_file(index_path), index_path);
    const json::Value* map = index.find("weight_map");
    const json::Value* shard = map && map->is_object() ? map->find(models::kScoreWeight) : nullptr;
    if (!shard || !shard->is_string())
      throw Error(index_path + ": \"weight_map\" does not name \"" + models::kScoreWeight + "\" (the classifier's head)");
    weights = path_in(dir, shard->as_string());
  }
  const int64_t hidden = saved.model->hidden_size();
  const int64_t classes = std::ssize(out.config.id2label);
  out.model = std::make_shared<models::ModelForSequenceClassification>(std::shared_ptr<models::CausalLM>(std::move(saved.model)),
                                                                       hidden, classes);
  models::load_score_weight(*out.model, weights, lora ? models::kPeftScoreWeight : models::kScoreWeight);
  out.model->eval();
  out.context = std::min<int64_t>(1024, out.model->body->context_length());
  if (std::filesystem::exists(path_in(dir, "optimizer.safetensors")))  // a train_gpt run: the texts as it cut them
    out.context = std::min(out.context, saved_options(dir).model.context_length);
  return out;
}

}  // namespace tg::train

namespace tg::train {

std::vector<std::string> model_files_in(const std::string& dir) {
  static const std::vector<std::string> names = {
      "config.json",          "generation_config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
      "special_tokens_map.json", "added_tokens.json",   "vocab.json",     "merges.txt",            models::kAdapterConfigFile};
  static const std::vector<std::string> endings = {".safetensors", ".safetensors.prev", ".safetensors.index.json", ".bin",
                                                   ".bin.index.json"};
  std::vector<std::string> found;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return found;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool model_file = std::find(names.begin(), names.end(), name) != names.end() ||
                            std::any_of(endings.begin(), endings.end(), [&](const std::string& e) { return name.ends_with(e); });
    if (model_file) found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

// The merged model of a LoRA run (saved: load_saved_model's, with the run's adapters; state: its
// merged_state_dict) as a Hugging Face folder of its base's kind, written into out.
void write_merged_folder(SavedModel& saved, NamedTensors& state, const std::string& run, const std::string& base,
                         const std::string& out) {
  if (const auto* llama = dynamic_cast<const models::LlamaForCausalLM*>(saved.model.get())) {
    // a folder of the base's model_type: its config.json's fields, the merged weights
    std::unique_ptr<models::LlamaForCausalLM> merged;
    {
      const nn::init::SkipInitGuard no_draws;  // every weight is set next
      merged = std::make_unique<models::LlamaForCausalLM>(llama->config());
    }
    merged->load_state_dict(state, /*strict=*/true, run);
    state.clear();
    saved.model.reset();
    models::HfLlamaInfo from;
    from.config = json::parse_file(path_in(base, "config.json"));
    if (saved.tokenizer) saved.tokenizer->save(out);  // before the files that make the folder a model
    models::save_hf_llama(*merged, out, from);  // config.json and model.safetensors, as a set
    return;
  }
  models::GPTModel merged(saved.config);  // plain: no adapters
  merged.load_state_dict(state, /*strict=*/true, run);
  AtomicFile config(path_in(out, "config.json"), "train_gpt --merge-lora");
  AtomicFile weights(path_in(out, "model.safetensors"), "train_gpt --merge-lora");
  models::write_hf_gpt2(merged, saved.base_layout, config, weights);
  saved.tokenizer->save(out);  // tokenizer.json, GPT-2's vocab.json and merges.txt
  config.prepare();
  weights.prepare();
  weights.commit();
  config.commit();
}

// Puts the model written whole in staging in the place of the one in out (old: its model files):
// first the old files the new model does not write are removed (an index whose shards would be
// read in place of the new model.safetensors, the shards, another model's files), then each new
// file is renamed over its namesake, config.json last (the name that makes the folder a model),
// then staging is removed. Each rename is atomic; a program killed between them leaves config.json
// of one model or the other beside files of both.
void replace_model_files(const std::string& staging, const std::string& out, const std::vector<std::string>& old) {
  std::vector<std::string> written = model_files_in(staging);
  for (const std::string& name : old)
    if (std::find(written.begin(), written.end(), name) == written.end()) {
      std::error_code ec;
      std::filesystem::remove(path_in(out, name), ec);
      if (ec) throw Error("--merge-lora " + out + ": cannot remove the old model's " + name + ": " + ec.message());
    }
  std::stable_partition(written.begin(), written.end(), [](const std::string& name) { return name != "config.json"; });
  for (const std::string& name : written) {
    std::error_code ec;
    std::filesystem::rename(path_in(staging, name), path_in(out, name), ec);
    if (ec) throw Error("--merge-lora " + out + ": cannot move the merged " + name + " in: " + ec.message());
  }
  std::error_code ec;
  std::filesystem::remove_all(staging, ec);
}

// A folder beside out for the merged model to be written whole before it replaces the one in out:
// ".<out's name>.merging" (one a killed merge left is removed first).
std::string staging_folder(const std::string& out) {
  std::filesystem::path target = std::filesystem::absolute(out).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "merged/" names the folder merged
  std::filesystem::path staging = target;
  staging.replace_filename(std::filesystem::path(".").concat(target.filename().native()).concat(".merging"));
  std::error_code ec;
  std::filesystem::remove_all(staging, ec);
  return staging.string();
}

}  // namespace

void save_merged_model(const std::string& run, const std::string& out, bool overwrite) {
  if (!std::filesystem::is_directory(run)) throw Error(run + ": no such folder");
  if (!is_lora_run(run))
    throw UsageError("--merge-lora: " + run + " has no LoRA adapters (" + models::kAdapterConfigFile +
                     " is missing): its model.safetensors is the whole model already");
  check_run_folder(run);
  const std::string base = adapters_of(run).base;
  std::error_code ec;
  for (const std::string& taken : {run, base})
    if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(out, taken, ec))
      throw UsageError("--merge-lora " + out + ": that is the " + (taken == run ? "run's" : "base model's") +
                       " folder; give a new one");
  const std::vector<std::string> old = model_files_in(out);  // another model's, replaced only when asked
  if (!old.empty() && !overwrite) {
    std::string list;
    for (const std::string& name : old) list += (list.empty() ? "" : ", ") + name;
    throw UsageError("--merge-lora " + out + ": the folder holds a model already (" + list +
                     "); give --overwrite to replace it, or a new folder");
  }
  SavedModel saved = load_saved_model(run);
  const auto* llama = dynamic_cast<const models::LlamaForCausalLM*>(saved.model.get());
  NamedTensors state = llama ? models::merged_state_dict(*llama)
                             : models::merged_state_dict(dynamic_cast<const models::GPTModel&>(*saved.model));
  try {  // finite base and adapters can still overflow in W + (alpha / r) B A
    check_finite(state, "the merged model");
  } catch (const Error& e) {
    throw Error("--merge-lora " + out + ": nothing written: " + e.what() + " (" + run + "'s adapters added to its base)");
  }
  const OutputFolder folder(out, "--merge-lora");  // removed again if the merge fails before writing into it
  if (old.empty()) {
    write_merged_folder(saved, state, run, base, out);
    return;
  }
  const std::string staging = staging_folder(out);
  try {
    const OutputFolder apart(staging, "--merge-lora");
    write_merged_folder(saved, state, run, base, staging);
  } catch (...) {
    std::filesystem::remove_all(staging, ec);  // out is as it was
    throw;
  }
  replace_model_files(staging, out, old);
}

}  // namespace tg::train
