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
#pragma once
#include <cstdint>
#include <memory>

#include "models/causal_lm.h"
#include "nn/layers.h"

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

}  // namespace tg::models
