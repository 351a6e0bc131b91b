// nn/generate.h — writing text with a GPTModel: pick the next token from the last position's
// logits, append it, repeat.
//
//   next token, from logits (B,V) of the last position:
//     temperature == 0   greedy: argmax
//     otherwise          logits / temperature
//                        top_k > 0:  logits below the k-th largest -> -inf (ties with it stay)
//                        p = softmax(logits)
//                        top_p < 1:  sort p descending; drop every token whose preceding
//                                    cumulative probability already exceeds top_p (the most
//                                    likely token always stays)
//                        one draw of multinomial(p), PyTorch-exact for the same generator
//
// examples/pytorch/gpt_model.py has the same procedure in PyTorch: the same model, prompt,
// options and generator seed give the same tokens.
//
// The model is used as it is: call model.eval() first, or dropout stays on. Past the model's
// context_length the window slides: each step sees only the last context_length tokens.
//
// With use_kv_cache (the default) the prompt is run once and each new token costs one
// position's work (GPTCache); the tokens are identical to recomputing the whole window each
// step (use_kv_cache = false). Once the window slides, every position shifts, so the cache is
// recomputed from the window at each step: past context_length the cache saves nothing.
#pragma once
#include <cstdint>

#include "autograd/generator.h"
#include "autograd/tensor.h"
#include "nn/gpt.h"

namespace tg::nn {

struct SamplingOptions {
  double temperature = 1.0;  // 0 = greedy
  int64_t top_k = 0;         // 0 = off; larger than the vocabulary = off
  double top_p = 1.0;        // 1 = off; in (0, 1]
  bool use_kv_cache = true;  // incremental decoding (same tokens, less work)
  void validate() const;     // tg::Error naming the option that is out of range
};

// logits (B,V) -> next token ids (B,1) int64. gen = nullptr draws from the default generator.
Tensor sample_next_token(const Tensor& logits, const SamplingOptions& options = {}, Generator* gen = nullptr);

// idx (B,T) int64 -> (B, T + max_new_tokens): the prompt followed by the generated tokens.
// Runs without recording (no tape), whatever the grad mode.
Tensor generate(GPTModel& model, const Tensor& idx, int64_t max_new_tokens, const SamplingOptions& options = {},
                Generator* gen = nullptr);

}  // namespace tg::nn
