// models/sequence_classification.cpp — the classifier's forward (see the header).
#include "models/sequence_classification.h"

#include <string>

#include "autograd/error.h"
#include "autograd/ops.h"

namespace tg::models {

ModelForSequenceClassification::ModelForSequenceClassification(std::shared_ptr<CausalLM> body_model,
                                                               int64_t hidden_size, int64_t num_labels)
    : Module("ModelForSequenceClassification"), num_labels_(num_labels) {
  if (num_labels < 2)
    throw Error("ModelForSequenceClassification: " + std::to_string(num_labels) + " labels: a classifier needs 2 or more");
  body = register_module("body", std::move(body_model));
  score = register_module("score", std::make_shared<nn::Linear>(hidden_size, num_labels, /*bias=*/false));
}

std::vector<int64_t> last_token_positions(const Tensor& key_padding_mask, int64_t batch, int64_t length) {
  std::vector<int64_t> last(static_cast<size_t>(batch), length - 1);
  if (!key_padding_mask.defined()) return last;
  const Tensor mask = key_padding_mask.to(kInt64).contiguous();
  const int64_t* padded = mask.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t tokens = 0;
    while (tokens < length && padded[b * length + tokens] == 0) ++tokens;
    for (int64_t t = tokens; t < length; ++t)
      if (padded[b * length + t] == 0)
        throw Error("sequence classification: row " + std::to_string(b) + " has a token at position " +
                    std::to_string(t) + " after padding: pad on the right");
    if (tokens == 0) throw Error("sequence classification: row " + std::to_string(b) + " is all padding");
    last[static_cast<size_t>(b)] = tokens - 1;
  }
  return last;
}

Tensor ModelForSequenceClassification::forward(const Tensor& idx, const Tensor& key_padding_mask) {
  const int64_t B = idx.size(0), T = idx.size(1);
  const Tensor h = body->hidden_states(idx, key_padding_mask);  // (B,T,C)
  const std::vector<int64_t> last = last_token_positions(key_padding_mask, B, T);
  std::vector<int64_t> rows;  // row b's last token in h seen as (B*T, C)
  for (int64_t b = 0; b < B; ++b) rows.push_back(b * T + last[static_cast<size_t>(b)]);
  const Tensor pooled = index_select(h.reshape({B * T, h.size(2)}), 0, from_vector(rows, {B}));  // (B,C)
  return score->forward(pooled);
}

}  // namespace tg::models
