// models/sequence_classification.h — a decoder-only language model read as a classifier, as the
// book's chapter 6 and Hugging Face's GPT2ForSequenceClassification, LlamaForSequenceClassification
// and Qwen3ForSequenceClassification make it:
//
//   h      = body.hidden_states(idx, key_padding_mask)     (B,T,C), the final norm's output
//   last_b = the last position of row b that is a token    rows are padded on the right
//   logits = score(h[b, last_b])                           (B, num_labels); score: Linear(C, n), no bias
//
// The last token is the only one that has read the whole text (causal attention), so its hidden
// state is what the head reads. The body's own output head (the logits over the vocabulary) is
// not used; its weights stay where they are. Training takes cross_entropy(logits, labels).
// Beside the model: which body weights train (set_trained_layers), and what a Hugging Face folder
// of this kind holds beyond its body (the classes in config.json, score.weight in the weights).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/json.h"
#include "models/causal_lm.h"
#include "nn/layers.h"
#include "tokenizers/tokenizer.h"

namespace tg::models {

class ModelForSequenceClassification : public nn::Module {
 public:
  ModelForSequenceClassification(std::shared_ptr<CausalLM> body, int64_t hidden_size, int64_t num_labels);

  // idx (B,T) int64; key_padding_mask bool (B,T), true = padding, only at the end of a row
  // (undefined: no padding) -> logits (B, num_labels). A row of padding alone, or padding before a
  // token, is an Error naming the row.
  Tensor forward(const Tensor& idx, const Tensor& key_padding_mask);
  Tensor forward(const Tensor& idx) override { return forward(idx, Tensor()); }  // no padding
  int64_t num_labels() const { return num_labels_; }

  std::shared_ptr<CausalLM> body;
  std::shared_ptr<nn::Linear> score;

 private:
  int64_t num_labels_;
};

// Each row's last token: the number of positions before its first padded one, less one (above).
std::vector<int64_t> last_token_positions(const Tensor& key_padding_mask, int64_t batch, int64_t length);

// Which of the body's weights train beside the head (train_gpt --train-layers):
//   "all"   every weight the classifier's forward reads (the body's own output head, untied, is
//           never read, so it stays frozen)
//   "last"  the last block and the final norm, as the book's chapter 6 trains GPT-2
//   "none"  the head alone (a LoRA run: its adapters are added after this)
// An unknown name, or a body that is neither a GPT nor a Llama / Qwen model, is an Error.
void set_trained_layers(ModelForSequenceClassification& model, const std::string& which);

// The classifier's part of a Hugging Face config.json (GPT2ForSequenceClassification,
// LlamaForSequenceClassification, Qwen3ForSequenceClassification ...): the classes by id (id2label,
// label2id and num_labels) and the id that pads a batch (pad_token_id; -1: null).
struct ClassifierConfig {
  std::vector<std::string> id2label;
  int64_t pad_token_id = -1;
};
// Those members as JSON text: {"architectures": [architecture], "id2label": {"0": ..., ...},
// "label2id": {...}, "num_labels": n, "pad_token_id": ...}.
std::string classifier_config_json(const ClassifierConfig& config, const std::string& architecture);
// A config.json whose "architectures" names a *ForSequenceClassification class.
bool is_classifier_config(const json::Value& config);
// config.json's classifier: id2label with the ids 0..n-1 each once (num_labels and label2id, when
// there, must agree), pad_token_id; an Error naming path and the field otherwise.
ClassifierConfig read_classifier_config(const json::Value& config, const std::string& path);

// The head's weight in a weights file of such a folder: "score.weight" (num_labels, hidden).
inline constexpr const char* kScoreWeight = "score.weight";
// ... and in a LoRA run's adapters file, where peft keeps modules_to_save ["score"] whole.
inline constexpr const char* kPeftScoreWeight = "base_model.model.score.weight";
// Read the head's weight (name: kScoreWeight, or kPeftScoreWeight from an adapters file) from the
// safetensors file at path into model.score (its shape checked, every value finite), all or
// nothing; an Error naming the file when it is missing or wrong.
void load_score_weight(ModelForSequenceClassification& model, const std::string& path,
                       const std::string& name = kScoreWeight);

// The class probabilities of one text's ids (at least one): softmax of the classifier's logits, in
// float64, in eval mode without a tape.
std::vector<double> class_probabilities(ModelForSequenceClassification& model, const std::vector<int64_t>& ids);
// The same for a text: its ids (Tokenizer::encode_with_bos), cut to the first `context`. An empty
// text, or one the tokenizer cannot encode, is an Error saying so.
std::vector<double> class_probabilities(ModelForSequenceClassification& model,
                                        const tokenizers::Tokenizer& tokenizer, const std::string& text, int64_t context);

}  // namespace tg::models
