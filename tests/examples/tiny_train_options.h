// The options of a tiny train_gpt run for tests that need a run folder or a Trainer in
// milliseconds: batch 2 of 8 tokens, width 8, 2 heads, n_layers blocks, 4 steps, 1 eval batch.
#pragma once
#include <cstdint>

#include "train/trainer.h"

namespace tg::test {

inline train::TrainOptions tiny_train_options(int64_t n_layers) {
  train::TrainOptions o;
  o.batch = 2;
  o.model.context_length = 8;
  o.model.emb_dim = 8;
  o.model.n_heads = 2;
  o.model.n_layers = n_layers;
  o.steps = 4;
  o.warmup = 1;
  o.eval_batches = 1;
  return o;
}

}  // namespace tg::test
