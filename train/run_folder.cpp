// train/run_folder.cpp — writing and reading a run folder.
#include "train/run_folder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "io/atomic_file.h"
#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "nn/safetensors.h"
#include "io/user_file.h"
#include "io/flags.h"
#include "models/hf/hf_config_reader.h"
#include "models/hf/hf_folder.h"
#include "models/hf/hf_gpt2.h"
#include "models/hf/hf_llama.h"
#include "models/lora/lora_adapters.h"
#include "models/saved_model.h"
#include "train/corpus.h"
#include "train/run_log.h"
#include "models/lora/gpt_lora.h"
#include "models/lora/llama_lora.h"
#include "nn/init.h"
#include "nn/serialize.h"

namespace tg::train {

namespace {
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

}  // namespace

void check_run_folder(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  for (const std::string& name : {models::run_weights_file(dir), std::string("optimizer.safetensors"), std::string("config.json"),
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

// config.json's text made a *ForSequenceClassification folder's: architecture, the classes and the
// padding id over the body's fields (a run's own settings last, when tapegrad is not empty).
std::string as_classifier_config(const std::string& config, const models::ClassifierConfig& classes,
                                 const std::string& architecture, const std::string& tapegrad) {
  const json::Value fields = json::parse(models::classifier_config_json(classes, architecture), "classifier fields");
  return models::merged_config_json(json::parse(config, "config.json"), fields, [](const std::string&) { return false; },
                                    tapegrad);
}

}  // namespace

void save_run(Trainer& trainer, const std::string& dir) {
  const std::string step = std::to_string(trainer.step());
  std::vector<AtomicFile> files;
  const models::AdapterConfig* lora = trainer.origin.lora ? &*trainer.origin.lora : nullptr;  // a LoRA run saves its adapters alone, in peft's names
  const models::HfGpt2Info* hf = lora || !trainer.origin.gpt2_layout ? nullptr : &*trainer.origin.gpt2_layout;  // a run from GPT-2: its layout and names
  const auto* llama_model = dynamic_cast<const models::LlamaForCausalLM*>(&trainer.model());
  const models::LlamaConfig* llama = llama_model ? &llama_model->config() : nullptr;  // a llama or qwen3 run: Hugging Face's layout
  const std::string weights_path = path_in(dir, lora ? models::kAdaptersFile : "model.safetensors");
  // GPT-2's layout is made a tensor at a time as the file reaches it (each matrix transposed to
  // Conv1D's orientation): the save holds one such copy beside the model, not a copy of it
  std::vector<TensorToWrite> weights =
      lora    ? tensors_to_write(models::peft_adapter_tensors(trainer.model()))
      : hf    ? models::hf_gpt2_tensors_to_write(trainer.gpt().config(), hf->prefixed, models::parameters_of(trainer.gpt()))
      : llama ? tensors_to_write(models::hf_llama_tensors(trainer.llama(), /*keep_16bit=*/true))
              : tensors_to_write(trainer.model().state_dict());
  models::ModelForSequenceClassification* classifier = trainer.classifier();
  if (classifier) {  // beside the body's weights (a LoRA run's: beside the adapters, as peft's modules_to_save)
    const Tensor score = classifier->score->weight.detach();
    weights.push_back({lora ? models::kPeftScoreWeight : models::kScoreWeight, score.dtype(), score.sizes(),
                       [score] { return score; }});
  }
  const NamedTensors optimizer_state = trainer.optimizer().state_dict();
  try {  // a non-finite checkpoint would replace the last good one, and could not be resumed
    for (const TensorToWrite& w : weights) check_finite({{w.name, w.make()}}, weights_path);
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
                       : llama ? models::hf_llama_config_json(*llama, trainer.origin.llama_config, run_config)
                               : run_config + "\n";
  if (classifier) {  // a *ForSequenceClassification folder: its classes and padding id
    const bool gpt2 = trainer.origin.gpt2_layout || (lora && lora->family == models::LoraFamily::gpt2);
    const std::string architecture =
        std::string(llama ? llama->class_prefix() : gpt2 ? "GPT2" : "GPT") + "ForSequenceClassification";
    const models::ClassifierConfig classes{trainer.classification()->classes, trainer.classification()->pad_id};
    config = as_classifier_config(config, classes, architecture, hf || llama ? run_config : "");
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

// The names of the model's weights that will train, read as float32 (the optimizer's masters):
// those that require grad, none in a LoRA run (its adapters, added after the read, train alone).
// The others keep a BF16 or F16 file's dtype under --dtype auto (a LoRA's base, a classifier's
// body below --train-layers): the same logits in half the bytes.
std::set<std::string> trained_names(Trainer& trainer) {
  std::set<std::string> names;
  if (trainer.options().lora_rank > 0) return names;
  for (const auto& [name, p] : nn::trainable_parameters(trainer.llama())) names.insert(name);
  return names;
}

// The newest model/optimizer files of the same step among the current ones and the .prev ones.
struct FilePair {
  std::string model, optimizer, step;
};
FilePair newest_consistent_pair(const std::string& dir) {
  const std::string model = path_in(dir, models::run_weights_file(dir)), opt = path_in(dir, "optimizer.safetensors");
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
    throw Error(dir + ": " + models::run_weights_file(dir) + " (step " + metadata_value(load_safetensors_metadata(model), "step", model) +
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
  for (const json::Member& m : models::run_section(doc)["train"].as_object()) {
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

namespace {

// --init-from DIR must be a Hugging Face GPT-2 folder (its config.json's model_type "gpt2").
void require_gpt2_folder(const std::string& dir) {
  if (!models::is_hf_gpt2_folder(dir))
    throw Error("--init-from " + dir + ": not a Hugging Face GPT-2 folder (" + path_in(dir, "config.json") +
                " with \"model_type\": \"gpt2\" is missing)");
}

}  // namespace

std::unique_ptr<Trainer> start_from_gpt2_folder(TrainOptions o, const std::string& text,
                                                std::vector<std::string>* converted) {
  const std::string config_path = path_in(o.init_from, "config.json");
  require_gpt2_folder(o.init_from);
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
  trainer->origin.gpt2_layout = layout;
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
  const models::HfLlamaInfo read = models::load_hf_llama_weights(  // checked first
      trainer->llama(), o.init_from, models::weights_dtype_from_flag(o.dtype), trained_names(*trainer));
  if (converted) *converted = read.converted_dtypes;
  trainer->origin.llama_config = std::move(source);
  // LoRA: the folder stays the base, named by its absolute path in the run's adapter_config.json
  if (o.lora_rank > 0) trainer->apply_lora(std::filesystem::absolute(o.init_from).lexically_normal().string());
  return trainer;
}

std::unique_ptr<Trainer> start_from_folder(TrainOptions& o, const std::vector<std::string>& given,
                                           std::vector<std::string>* converted) {
  const std::string config_path = path_in(o.init_from, "config.json");
  std::unique_ptr<Trainer> trainer;
  if (models::is_hf_llama_folder(o.init_from)) {
    const models::LlamaConfig config = models::hf_llama_config(json::parse_file(config_path), config_path);
    take_folder_defaults(o, given, config.class_prefix(), config.max_position_embeddings, config.attention_dropout);
    check_lora_rank(o, config);
    trainer = start_from_llama_folder(o, read_data(o.data), converted);
  } else {
    require_gpt2_folder(o.init_from);
    const models::GPTConfig config = models::hf_gpt2_config(json::parse_file(config_path), config_path);
    take_folder_defaults(o, given, "GPT-2", config.context_length, config.drop_rate);
    check_lora_rank(o, config);
    trainer = start_from_gpt2_folder(o, read_data(o.data), converted);
  }
  o = trainer->options();  // the model's shape from the folder, as the run saves it
  return trainer;
}

std::unique_ptr<Trainer> resume_trainer(const std::string& dir, const TrainOptions& options, const std::string& text) {
  check_run_folder(dir);
  remove_killed_saves(dir);
  const bool llama = models::is_hf_llama_folder(dir);  // a llama or qwen3 run (Hugging Face's layout)
  const bool lora = models::is_lora_run(dir), from_gpt2 = !llama && (lora || models::is_hf_gpt2_folder(dir));
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
    const models::GPTConfig model = models::run_gpt_config(models::run_section(config)["model"]);
    if (lora) {  // the base model's weights, then the adapters
      adapters = models::run_adapters(dir);
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
      adapters = models::run_adapters(dir);
      models::check_hf_llama_weights(model, adapters->base);
      models::check_peft_adapters(model_path, model, adapters->lora);
    } else {
      models::check_hf_llama_weights(model, model_path);
    }
    const Activity building("building the model of " + config_path);
    trainer = std::make_unique<Trainer>(options, text, tokenizers::load_tokenizer(dir), model);
    trainer->origin.llama_config = config;
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
      models::check_run_weights(model, model_path);
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
  const models::WeightsDtype frozen_dtype = models::weights_dtype_from_flag(trainer->options().dtype);
  if (lora) {
    if (llama) {
      models::load_hf_llama_weights(trainer->llama(), adapters->base, frozen_dtype, trained_names(*trainer));
    } else {
      models::HfGpt2Info base;
      models::load_hf_gpt2_weights(trainer->gpt(), path_in(adapters->base, "model.safetensors"), &base);
    }
    trainer->apply_lora(adapters->base);
    models::load_peft_adapters(trainer->model(), model_path);  // all or nothing
  } else if (from_gpt2) {
    models::load_hf_gpt2_weights(trainer->gpt(), model_path, &layout);  // all or nothing
    trainer->origin.gpt2_layout = layout;
  } else if (llama) {
    // checks every name, shape and value
    models::load_hf_llama_weights(trainer->llama(), model_path, frozen_dtype, trained_names(*trainer));
  } else {
    // checks every name, shape, dtype and value; all or nothing
    load(trainer->model(), model_path, trainer->classifier() ? models::kClassifierBody : models::kFiniteOnly);
  }
  if (models::ModelForSequenceClassification* classifier = trainer->classifier())
    models::load_score_weight(*classifier, model_path, lora ? models::kPeftScoreWeight : models::kScoreWeight);
  const NamedTensors opt_state = load_safetensors(opt_path, models::kFiniteOnly);  // nan moments would make nan weights
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

// A LoRA run's model to merge: the body with its adapters (saved.model, or the classifier's
// body), and a classifier's head, kept whole by the run (peft's modules_to_save) and written as it is.
struct MergeSource {
  models::SavedModel saved;
  std::shared_ptr<models::ModelForSequenceClassification> classifier;  // a --task classify run's, or null
  models::ClassifierConfig classes;
  const models::CausalLM& body() const { return classifier ? *classifier->body : *saved.model; }
};

// One merged weight of the body by its state_dict name (models::merged_tensor of its family).
Tensor merged_weight(const models::CausalLM& body, const std::string& name) {
  if (const auto* llama = dynamic_cast<const models::LlamaForCausalLM*>(&body)) return models::merged_tensor(*llama, name);
  return models::merged_tensor(dynamic_cast<const models::GPTModel&>(body), name);
}

// The merged model of a LoRA run as a Hugging Face folder of its base's kind (a classifier's run:
// its *ForSequenceClassification, with the head and the classes), written into out. Each weight is
// merged and widened as the file reaches it: beside the run's model (a BF16 base kept 16-bit) the
// merge holds one float32 weight at a time, never a float32 copy of the model.
void write_merged_folder(const MergeSource& source, const std::string& base, const std::string& out) {
  const models::CausalLM& body = source.body();
  const models::WeightMaker merged = [&body](const std::string& name) { return merged_weight(body, name); };
  const auto* llama = dynamic_cast<const models::LlamaForCausalLM*>(&body);
  std::vector<TensorToWrite> tensors;
  std::string config;  // of the base's model_type: its config.json's fields kept
  if (llama) {
    tensors = models::hf_llama_tensors_to_write(llama->config(), merged);
    config = models::hf_llama_config_json(llama->config(), json::parse_file(path_in(base, "config.json")));
  } else {
    const models::SavedModel& saved = source.saved;
    tensors = models::hf_gpt2_tensors_to_write(saved.config, saved.base_layout.prefixed, merged);
    config = models::hf_gpt2_config_json(saved.config, saved.base_layout.config);
  }
  if (source.classifier) {  // the head beside the body, the classes in config.json
    const Tensor score = source.classifier->score->weight.detach();
    tensors.push_back({models::kScoreWeight, score.dtype(), score.sizes(), [score] { return score; }});
    const std::string architecture = (llama ? llama->config().class_prefix() : "GPT2") + "ForSequenceClassification";
    config = as_classifier_config(config, source.classes, architecture, "");
  }
  if (source.saved.tokenizer)  // tokenizer.json (GPT-2's vocab.json and merges.txt) before the files that make the folder a model
    source.saved.tokenizer->save(out);
  AtomicFile config_file(path_in(out, "config.json"), "train_gpt --merge-lora");
  AtomicFile weights(path_in(out, "model.safetensors"), "train_gpt --merge-lora");
  save_safetensors(weights, tensors, {{"format", "pt"}});
  config_file.write(config);
  config_file.prepare();
  weights.prepare();
  weights.commit();
  config_file.commit();
}

// Throws for the first merged weight with an inf or a nan (finite base and adapters can still
// overflow in W + (alpha / r) B A), before anything is written: each merged, checked and let go.
void check_merged_finite(const MergeSource& source, const std::string& run, const std::string& out) {
  try {
    for (const auto& [name, t] : source.body().state_dict())
      if (!models::is_adapter_name(name)) check_finite({{name, merged_weight(source.body(), name)}}, "the merged model");
  } catch (const Error& e) {
    throw Error("--merge-lora " + out + ": nothing written: " + e.what() + " (" + run + "'s adapters added to its base)");
  }
}

// The run's model (the base as its files hold it: a BF16 folder's matrices 16-bit, each widened as
// it is written) with its adapters, and a classifier run's head and classes.
MergeSource read_merge_source(const std::string& run) {
  MergeSource source;
  source.saved = models::load_saved_model(run, models::WeightsDtype::kCheckpoint);
  if (source.saved.classifier) {
    const std::string config_path = path_in(run, "config.json");
    source.classes = models::read_classifier_config(json::parse_file(config_path), config_path);
    const int64_t hidden = source.saved.model->hidden_size();
    source.classifier = std::make_shared<models::ModelForSequenceClassification>(
        std::shared_ptr<models::CausalLM>(std::move(source.saved.model)), hidden, std::ssize(source.classes.id2label));
    models::load_score_weight(*source.classifier, path_in(run, models::kAdaptersFile), models::kPeftScoreWeight);
  }
  return source;
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
  if (!models::is_lora_run(run))
    throw UsageError("--merge-lora: " + run + " has no LoRA adapters (" + models::kAdapterConfigFile +
                     " is missing): its model.safetensors is the whole model already");
  check_run_folder(run);
  const std::string base = models::run_adapters(run).base;
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
  const MergeSource source = read_merge_source(run);
  check_merged_finite(source, run, out);
  const OutputFolder folder(out, "--merge-lora");  // removed again if the merge fails before writing into it
  if (old.empty()) {
    write_merged_folder(source, base, out);
    return;
  }
  const std::string staging = staging_folder(out);
  try {
    const OutputFolder apart(staging, "--merge-lora");
    write_merged_folder(source, base, staging);
  } catch (...) {
    std::filesystem::remove_all(staging, ec);  // out is as it was
    throw;
  }
  replace_model_files(staging, out, old);
}

}  // namespace tg::train
