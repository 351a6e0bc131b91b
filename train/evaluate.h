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

}  // namespace tg::train
