// models/saved_model.cpp — reading a saved model back, of any folder kind (models/saved_model.h).
#include "models/saved_model.h"

#include <algorithm>
#include <filesystem>

#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "io/atomic_file.h"
#include "io/flags.h"
#include "io/user_file.h"
#include "models/lora/gpt_lora.h"
#include "models/hf/hf_folder.h"
#include "models/hf/hf_llama.h"
#include "models/lora/llama_lora.h"
#include "nn/init.h"
#include "nn/serialize.h"

namespace tg::models {

const SafetensorsReadOptions kFiniteOnly{.finite_only = true};
const SafetensorsReadOptions kClassifierBody{.finite_only = true,
                                             .skip = [](const std::string& name) { return name == kScoreWeight; }};

bool is_lora_run(const std::string& dir) { return std::filesystem::exists(path_in(dir, kAdapterConfigFile)); }

std::string run_weights_file(const std::string& dir) { return is_lora_run(dir) ? kAdaptersFile : "model.safetensors"; }

AdapterConfig run_adapters(const std::string& dir) {
  const std::string path = path_in(dir, kAdapterConfigFile);
  AdapterConfig adapters = read_adapter_config(path);
  const LoraFamily model = is_hf_llama_folder(dir) ? LoraFamily::llama : LoraFamily::gpt2;
  if (adapters.family != model)
    throw Error(path + ": \"target_modules\" are " + family_name(adapters.family) + "'s but the run's config.json is a " +
                family_name(model) + " model's: not a consistent run");
  if (!std::filesystem::is_directory(adapters.base))
    throw Error(path + ": the base model " + adapters.base + " (base_model_name_or_path) is gone: the run holds its "
                "adapters alone; put the base model's folder back there");
  return adapters;
}

const json::Value& run_section(const json::Value& doc) {
  const json::Value* section = doc.is_object() ? doc.find(kTapegradSection) : nullptr;
  return section ? *section : doc;
}

GPTConfig run_gpt_config(const json::Value& m) {
  GPTConfig c;
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

void check_run_weights(const GPTConfig& c, const std::string& path) {
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
  if (const int64_t blocks = std::min<int64_t>(blocks_in_file(file, "trf_blocks."), std::ssize(file));
      blocks < c.n_layers)
    throw Error(path + ": tensor \"trf_blocks." + std::to_string(blocks) + ".norm1.weight\" is missing (the run's " +
                "config.json has n_layers " + std::to_string(c.n_layers) + "; the file has " + std::to_string(blocks) +
                " blocks)");
}

namespace {

// A train_gpt run's --context (config.json's "train"."context"): the length its texts were cut to.
int64_t saved_context(const json::Value& config, const std::string& path) {
  const json::Value* train = run_section(config).find("train");
  const json::Value* context = train && train->is_object() ? train->find("context") : nullptr;
  if (!context || !context->is_number() || context->as_int64() < 1)
    throw Error(path + ": \"train.context\" is missing or not a positive number");
  return context->as_int64();
}

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
void add_run_adapters(Model& base, const Config& config, const AdapterConfig& adapters, const std::string& dir) {
  const std::string adapters_path = path_in(dir, kAdaptersFile);
  check_peft_adapters(adapters_path, config, adapters.lora);
  const Activity adding("adding the LoRA adapters of " + path_in(dir, kAdapterConfigFile));
  const std::vector<uint8_t> generator = default_generator().get_state();
  apply_lora(base, adapters.lora);
  default_generator().set_state(generator);
  load_peft_adapters(base, adapters_path);
}

// A LoRA run's config.json (beside its adapters) names a *ForSequenceClassification model.
bool lora_run_is_classifier(const std::string& dir) {
  const std::string config_path = path_in(dir, "config.json");
  return std::filesystem::exists(config_path) &&
         is_classifier_config(json::parse(read_user_file(config_path), config_path));
}

// load_saved_model's folder, a classifier's body without its output head included (lm_head_missing).
SavedModel load_saved_body(const std::string& dir, bool* lm_head_missing, WeightsDtype dtype) {
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  SavedModel saved;
  // config.json read once, first: what it is decides the reader (or is the error, naming the file)
  const ModelFolderKind kind = model_folder_kind(dir);
  if (is_lora_run(dir) && kind == ModelFolderKind::llama) {  // the base Llama / Qwen folder's model and the adapters
    const AdapterConfig adapters = run_adapters(dir);
    HfLlama base = load_hf_llama(adapters.base, dtype);
    saved.stop_token = single_eos_id(base.info.config);
    *lm_head_missing = base.info.lm_head_missing;
    saved.classifier = lora_run_is_classifier(dir);
    saved.converted_dtypes = base.info.converted_dtypes;
    add_run_adapters(*base.model, base.config, adapters, dir);
    saved.model = std::move(base.model);
    if (std::filesystem::exists(path_in(dir, "tokenizer.json"))) saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else if (is_lora_run(dir)) {  // the base GPT-2 folder's model with the run's adapters
    const AdapterConfig adapters = run_adapters(dir);
    HfGpt2 base = load_hf_gpt2(adapters.base);
    saved.config = base.config;
    saved.classifier = lora_run_is_classifier(dir);
    saved.converted_dtypes = base.info.converted_dtypes;
    saved.base_layout = base.info;
    add_run_adapters(*base.model, saved.config, adapters, dir);
    saved.model = std::move(base.model);
    saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else if (kind == ModelFolderKind::llama) {  // a Llama / Qwen folder, or a llama or qwen3 run
    HfLlama hf = load_hf_llama(dir, dtype);
    saved.stop_token = single_eos_id(hf.info.config);
    *lm_head_missing = hf.info.lm_head_missing;
    saved.classifier = is_classifier_config(hf.info.config);
    saved.model = std::move(hf.model);
    saved.converted_dtypes = hf.info.converted_dtypes;
    if (std::filesystem::exists(path_in(dir, "tokenizer.json"))) saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else if (kind == ModelFolderKind::gpt2) {  // Hugging Face's layout (a GPT-2 folder, or a run from one)
    HfGpt2 hf = load_hf_gpt2(dir);
    saved.config = hf.config;
    saved.classifier = is_classifier_config(hf.info.config);
    saved.model = std::move(hf.model);
    saved.converted_dtypes = hf.info.converted_dtypes;
    saved.tokenizer = tokenizers::load_tokenizer(dir);
  } else {
    const bool has_weights = std::filesystem::exists(path_in(dir, "model.safetensors")) ||
                             std::filesystem::exists(path_in(dir, "model.safetensors.index.json"));
    if (kind == ModelFolderKind::none && has_weights)  // weights, sharded or not, and nothing to say what
      throw Error(dir + ": not a model folder (config.json is missing)");
    for (const char* name : {"model.safetensors", "config.json", "tokenizer.json"})
      if (!std::filesystem::exists(path_in(dir, name)))
        throw Error(dir + ": not a model folder (" + std::string(name) + " is missing)");
    const std::string config_path = path_in(dir, "config.json"), tokenizer_path = path_in(dir, "tokenizer.json");
    const std::string weights_path = path_in(dir, "model.safetensors");
    json::Value config;
    try {
      config = json::parse(read_user_file(config_path), config_path);
      saved.config = run_gpt_config(config["model"]);
    } catch (const Error& e) {
      throw Error(config_path + ": " + e.what());
    }
    saved.tokenizer = tokenizers::Tokenizer::from_json(read_user_file(tokenizer_path), tokenizer_path);
    check_run_weights(saved.config, weights_path);  // before the model takes any memory
    const Activity building("building the model of " + config_path);
    std::unique_ptr<GPTModel> model;
    {
      const nn::init::SkipInitGuard no_draws;  // every weight is read next (load is strict: all are in the file)
      model = std::make_unique<GPTModel>(saved.config);
    }
    saved.classifier = is_classifier_config(config);
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

SavedModel load_saved_model(const std::string& dir, WeightsDtype dtype) {
  bool lm_head_missing = false;
  SavedModel saved = load_saved_body(dir, &lm_head_missing, dtype);
  if (lm_head_missing)
    throw Error(dir + ": a classifier without lm_head.weight (a Hugging Face Llama / Qwen classifier keeps its body and "
                      "score.weight): it writes and scores no text; give it to generate --classify or evaluate --task classify");
  return saved;
}

const tokenizers::Tokenizer& SavedModel::the_tokenizer(const std::string& dir) const {
  if (!tokenizer) throw Error(dir + ": no tokenizer.json beside the model: give token ids (--prompt-ids), not text");
  return *tokenizer;
}

SavedClassifier load_saved_classifier(const std::string& dir, WeightsDtype dtype) {
  const std::string config_path = path_in(dir, "config.json");
  if (!std::filesystem::is_directory(dir)) throw Error(dir + ": no such folder");
  if (!std::filesystem::exists(config_path)) throw Error(dir + ": not a model folder (config.json is missing)");
  const json::Value config = json::parse(read_user_file(config_path), config_path);
  if (!is_classifier_config(config))
    throw Error(config_path + ": \"architectures\" names no *ForSequenceClassification model: " + dir +
                " is not a classifier (train one with train_gpt --task classify)");
  SavedClassifier out;
  out.config = read_classifier_config(config, config_path);  // before the body takes any memory
  bool lm_head_missing = false;  // the body's own head is not read here
  SavedModel saved = load_saved_body(dir, &lm_head_missing, dtype);  // score.weight passed over, or the error naming the folder
  out.tokenizer = saved.tokenizer;
  // the head's weight: in model.safetensors, or the shard the index puts it in, or a LoRA run's adapters file
  const bool lora = is_lora_run(dir);
  std::string weights = path_in(dir, lora ? kAdaptersFile : "model.safetensors");
  if (!std::filesystem::exists(weights) && std::filesystem::exists(path_in(dir, "model.safetensors.index.json"))) {
    const std::string index_path = path_in(dir, "model.safetensors.index.json");
    const json::Value index = json::parse(read_user_file(index_path), index_path);
    const json::Value* map = index.find("weight_map");
    const json::Value* shard = map && map->is_object() ? map->find(kScoreWeight) : nullptr;
    if (!shard || !shard->is_string())
      throw Error(index_path + ": \"weight_map\" does not name \"" + kScoreWeight + "\" (the classifier's head)");
    weights = path_in(dir, shard->as_string());
  }
  const int64_t hidden = saved.model->hidden_size();
  const int64_t classes = std::ssize(out.config.id2label);
  out.model = std::make_shared<ModelForSequenceClassification>(std::shared_ptr<CausalLM>(std::move(saved.model)),
                                                                       hidden, classes);
  load_score_weight(*out.model, weights, lora ? kPeftScoreWeight : kScoreWeight);
  out.model->eval();
  out.context = std::min<int64_t>(1024, out.model->body->context_length());
  if (std::filesystem::exists(path_in(dir, "optimizer.safetensors")))  // a train_gpt run: the texts as it cut them
    out.context = std::min(out.context, saved_context(config, config_path));
  return out;
}

}  // namespace tg::models
