// models/saved_model.h — a saved model read back for writing text, scoring or classifying,
// whatever folder holds it: a train_gpt run, a Hugging Face GPT-2 or Llama / Qwen folder, a LoRA
// run on one of them, or a classifier of any of these.
//
// Read first: load_saved_model, then load_saved_classifier. The folder's kind comes from its
// config.json (models/hf/hf_folder.h); each kind's own reader is in hf_gpt2.h, hf_llama.h and
// lora_adapters.h. Saving a run, and starting or resuming one, are training's (train/run_folder.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"
#include "models/causal_lm.h"
#include "models/gpt.h"
#include "models/hf/hf_folder.h"
#include "models/hf/hf_gpt2.h"
#include "models/lora/lora_adapters.h"
#include "models/sequence_classification.h"
#include "nn/safetensors.h"
#include "tokenizers/tokenizer.h"

namespace tg::models {

// Every way of building a model from a folder here (and train/run_folder.h's) first compares the
// config with the weights file's header (and a LoRA run's r with its adapters file's): a config.json
// asking for more than the file holds is an Error naming the file and the tensor before any model
// or adapter takes memory.
//
// A saved model for writing text: the model, its tokenizer and its end-of-text token.
// dir: a train_gpt run folder, a Hugging Face GPT-2 folder (models/hf/hf_gpt2.h) with GPT-2's
// tokenizer files beside the model (a fine-tuned run from GPT-2 is one too), or a Llama / Qwen
// folder (models/hf/hf_llama.h: a llama or qwen3 run is one too), whose tokenizer files are optional.
// A classifier's folder gives its body; one without the body's output head (a Hugging Face Llama /
// Qwen classifier's has no lm_head.weight) is an Error: it writes no text.
struct SavedModel {
  GPTConfig config;  // a GPT's (empty for a Llama / Qwen model)
  std::optional<tokenizers::Tokenizer> tokenizer;  // none: a Llama / Qwen folder without tokenizer.json
  std::unique_ptr<CausalLM> model;                 // in eval mode
  // The id that ends a text: the tokenizer's end-of-text, else config.json's eos_token_id when it
  // is one number; -1: none.
  int64_t stop_token = -1;
  std::vector<std::string> converted_dtypes;  // a Hugging Face folder's 16-bit weights read as float32 ("F16", "BF16")
  HfGpt2Info base_layout;  // a LoRA run's base folder as read (its names' prefix, its config.json)
  // config.json names a *ForSequenceClassification model: the model here is its body
  bool classifier = false;
  // The tokenizer, or an Error naming dir when the folder has none.
  const tokenizers::Tokenizer& the_tokenizer(const std::string& dir) const;
};
// dtype: the weights' dtype for a Llama / Qwen folder, or the base of a LoRA run on one
// (models/hf/hf_folder.h: kCheckpoint keeps a BF16 or F16 file's matrices 16-bit, the same logits);
// every other folder is read as float32.
SavedModel load_saved_model(const std::string& dir, WeightsDtype dtype = WeightsDtype::kFloat32);

// A saved classifier (train_gpt --task classify, or a Hugging Face *ForSequenceClassification
// folder of GPT-2, Llama or Qwen): the body as load_saved_model reads it, the head from
// score.weight, the classes and pad_token_id from config.json (models/sequence_classification.h).
// A folder of another kind is an Error saying it is no classifier.
struct SavedClassifier {
  std::shared_ptr<ModelForSequenceClassification> model;  // in eval mode
  std::optional<tokenizers::Tokenizer> tokenizer;
  ClassifierConfig config;
  // the tokens a text is cut to: a train_gpt run's --context, else the model's positions (at most 1024)
  int64_t context = 0;
};
SavedClassifier load_saved_classifier(const std::string& dir, WeightsDtype dtype = WeightsDtype::kFloat32);

// --- the parts of a train_gpt run's folder that a model is read from (train/run_folder.h saves them)

// A LoRA run's folder: it has an adapter_config.json.
bool is_lora_run(const std::string& dir);

// The run's trained weights' file: model.safetensors, or a LoRA run's adapters.safetensors.
std::string run_weights_file(const std::string& dir);

// A LoRA run's adapter_config.json: its base folder checked to be there, and its target_modules
// to be of the run's model (a Llama's config.json beside GPT-2's adapters is no run).
AdapterConfig run_adapters(const std::string& dir);

// config.json's train_gpt part: the whole file, or its "tapegrad" member in a run from a Hugging
// Face folder (whose config.json is Hugging Face's).
const json::Value& run_section(const json::Value& doc);

// A GPT run's config.json "model" member as a GPTConfig (validated; older runs' missing fields
// take the values they were made with).
GPTConfig run_gpt_config(const json::Value& model);

// A GPT run's model.safetensors header (no data read) against the config a model is about to be
// built from: the tensors that carry its sizes, tok_emb.weight (V, C) and pos_emb.weight (P, C),
// and the blocks' count, so that a config.json that disagrees with the file is refused before the
// model takes any memory (load() checks every name, shape and dtype once it is built).
void check_run_weights(const GPTConfig& c, const std::string& path);

// How weights, adapters and optimizer states are read back: finite only (one inf or nan makes
// every output nan; the error names the file, the tensor and the index). A classifier's body in
// tapegrad's layout passes over the head's score.weight beside it (load_score_weight reads it).
extern const SafetensorsReadOptions kFiniteOnly;
extern const SafetensorsReadOptions kClassifierBody;

}  // namespace tg::models
