// train/evaluate.h — a saved model's loss on a whole text (train_gpt --eval-only).
//
// The text's ids are cut into windows of context + 1 ids, one after another without overlap:
// x = a window's first ids, y = the same shifted by one, so every id but the first is a target
// exactly once (the last window may be shorter). Over all the targets:
//   loss       = the mean of -log p(target), in nats
//   perplexity = exp(loss)
//   bpb        = the targets' summed loss / ln 2 / the bytes of text they stand for
#pragma once
#include <cstdint>
#include <vector>

#include "tokenizers/tokenizer.h"
#include "models/causal_lm.h"
#include "models/sequence_classification.h"
#include "train/classification_data.h"

namespace tg::train {

struct TextEval {
  double loss = 0, perplexity = 0, bpb = 0;
  int64_t tokens = 0, bytes = 0;  // targets, and their bytes
};

// ids: the whole text's ids (at least 2); windows are run `batch` at a time, in eval mode. context:
// the windows' length, at most the model's (0: the model's; a Qwen3's 40,960 positions are more
// than a CPU's memory holds at once).
TextEval evaluate_text(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer, const std::vector<int64_t>& ids,
                       int64_t batch, int64_t context = 0);

// A classifier on labelled examples (train/classification_data.h), `batch` at a time in order, in
// eval mode without a tape:
//   loss       the mean cross entropy of the logits against the labels
//   acc        the share whose most likely class (the first of equal ones) is the label
//   confusion  confusion[label][predicted]: how many examples of each class went to each class
struct ClassifierEval {
  double loss = 0, acc = 0;
  std::vector<std::vector<int64_t>> confusion;
  int64_t examples = 0;
};
ClassifierEval evaluate_classifier(models::ModelForSequenceClassification& model,
                                   const std::vector<ClassificationExample>& examples, int64_t batch, int64_t pad_id);

}  // namespace tg::train
