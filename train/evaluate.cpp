// train/evaluate.cpp — the whole-text evaluation of evaluate.h.
#include "train/evaluate.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::train {

TextEval evaluate_text(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer, const std::vector<int64_t>& ids,
                       int64_t batch, int64_t context) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t T = context > 0 ? std::min(context, model.context_length()) : model.context_length();
  if (n < 2) throw Error("the text has " + std::to_string(n) + " tokens: at least 2 are needed (one to predict)");
  const std::vector<int64_t> bytes_of = tokenizer.bytes_per_id();
  NoGradGuard no_grad;
  model.eval();
  TextEval r;
  double nats = 0;
  // window w covers ids [w T, w T + T]; the last one ends at n - 1
  std::vector<int64_t> starts;
  for (int64_t s = 0; s + 1 < n; s += T) starts.push_back(s);
  for (size_t first = 0; first < starts.size();) {
    // a batch of windows of one length: full ones, or the last, shorter one alone
    const int64_t len = std::min(T, n - 1 - starts[first]);
    std::vector<int64_t> x, y;
    size_t w = first;
    for (; w < starts.size() && static_cast<int64_t>(w - first) < batch; ++w) {
      if (std::min(T, n - 1 - starts[w]) != len) break;
      x.insert(x.end(), ids.begin() + starts[w], ids.begin() + starts[w] + len);
      y.insert(y.end(), ids.begin() + starts[w] + 1, ids.begin() + starts[w] + len + 1);
    }
    const int64_t rows = static_cast<int64_t>(w - first);
    const Tensor logits = model.forward(from_vector(x, {rows, len}));  // (rows, len, V)
    nats += cross_entropy(logits.flatten(0, 1), from_vector(y, {rows * len}), "sum").item<double>();
    for (int64_t id : y) r.bytes += bytes_of[static_cast<size_t>(id)];
    r.tokens += rows * len;
    first = w;
  }
  r.loss = nats / static_cast<double>(r.tokens);
  r.perplexity = std::exp(r.loss);
  r.bpb = nats / std::log(2.0) / static_cast<double>(r.bytes);
  return r;
}

ClassifierEval evaluate_classifier(models::ModelForSequenceClassification& model,
                                   const std::vector<ClassificationExample>& examples, int64_t batch, int64_t pad_id) {
  if (examples.empty()) throw Error("evaluate_classifier: no examples");
  NoGradGuard no_grad;
  model.eval();
  const int64_t L = model.num_labels();
  ClassifierEval r;
  r.confusion.assign(static_cast<size_t>(L), std::vector<int64_t>(static_cast<size_t>(L), 0));
  double nats = 0;
  int64_t right = 0;
  for (int64_t first = 0; first < std::ssize(examples); first += batch) {
    std::vector<int64_t> which;
    for (int64_t i = first; i < std::min(first + batch, std::ssize(examples)); ++i) which.push_back(i);
    const Batch b = classification_batch(examples, which, pad_id);
    const Tensor logits = model.forward(b.x, b.key_padding_mask).contiguous();  // (B, L)
    nats += cross_entropy(logits, b.y, "sum").item<double>();
    const float* rows = logits.data_ptr<float>();
    for (size_t k = 0; k < which.size(); ++k) {
      const float* row = rows + static_cast<int64_t>(k) * L;
      const int64_t predicted = std::max_element(row, row + L) - row;
      const int64_t label = examples[static_cast<size_t>(which[k])].label;
      right += predicted == label;
      ++r.confusion[static_cast<size_t>(label)][static_cast<size_t>(predicted)];
    }
  }
  r.examples = std::ssize(examples);
  r.loss = nats / static_cast<double>(r.examples);
  r.acc = static_cast<double>(right) / static_cast<double>(r.examples);
  return r;
}

}  // namespace tg::train
