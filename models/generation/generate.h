// models/generation/generate.h — writing text with a decoder model (a CausalLM: models/gpt.h's GPTModel,
// models/llama.h's LlamaForCausalLM): pick the next token from the last position's logits,
// append it, repeat. examples/pytorch/tapegrad_twin/gpt_model.py has the same procedure in PyTorch: the same
// model, prompt, options and generator seed give the same tokens.
//
// Read first: sample_next_token (how one token is picked), then generate (the loop: its window,
// its KV cache, when it stops). The model is used as it is: call model.eval() first, or dropout
// stays on.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/tensor.h"
#include "models/causal_lm.h"
#include "tokenizers/tokenizer.h"

namespace tg::models {

// The temperatures sampling takes besides 0 (greedy). Below the minimum, float32 logits divided by
// the temperature overflow to inf (1e-300 becomes 0 in float32) and the probabilities to nan;
// already at 1e-4 a logit 0.01 below the largest is e^-100 times less likely: greedy in all but name.
constexpr double kMinTemperature = 1e-4, kMaxTemperature = 100;

struct SamplingOptions {
  double temperature = 1.0;  // 0 = greedy, else in [kMinTemperature, kMaxTemperature]
  int64_t top_k = 0;         // 0 = off; larger than the vocabulary = off
  double top_p = 1.0;        // 1 = off; in (0, 1]
  bool use_kv_cache = true;  // incremental decoding (same tokens, less work)
  int64_t keep_when_full = 0;  // past the context: restart the window from this many tokens (0 = slide)
  int64_t stop_token = -1;     // stop once every row has written this id; -1 = never
  std::vector<int64_t> suppress_tokens{};  // ids never written (their logits -> -inf)
  void validate() const;     // tg::Error naming the option that is out of range
};

// logits (B,V) -> next token ids (B,1) int64. gen = nullptr draws from the default generator.
// position (>= 0): the index in the sequence of the token whose logits these are, for the error
// on logits that are not finite ("generate: the logits at position 7 are not finite (nan at id 3)").
//
//   temperature == 0   greedy: argmax
//   otherwise          logits / temperature (temperature in [kMinTemperature, kMaxTemperature])
//                      top_k > 0:  logits below the k-th largest -> -inf (ties with it stay)
//                      p = softmax(logits)
//                      top_p < 1:  sort p descending; drop every token whose preceding
//                                  cumulative probability already exceeds top_p (the most
//                                  likely token always stays)
//                      one draw of multinomial(p), PyTorch-exact for the same generator
//
// Two rules hold before any token is picked, greedy or sampled:
//   - the ids of options.suppress_tokens get -inf (Hugging Face's suppress_tokens): a model whose
//     vocabulary is padded past its tokenizer's (Qwen2.5's and Qwen3's 151,936 ids for 151,669
//     tokens) never writes an id its tokenizer cannot decode (ids_the_tokenizer_cannot_write);
//   - logits that are not finite (a NaN or +inf anywhere, or no id above -inf) are an error naming
//     the position, never a token: argmax of NaNs would write id 0 as if it were the answer.
Tensor sample_next_token(const Tensor& logits, const SamplingOptions& options = {}, Generator* gen = nullptr,
                         int64_t position = -1);

// The ids of a model's vocabulary_size that tokenizer cannot decode, ascending: those at or past
// its vocab_size (a padded embedding) and the ids inside it that are no token (a hole in a Hugging
// Face tokenizer's ids). Empty when it can write every id: what SamplingOptions::suppress_tokens
// takes for text written with that tokenizer.
std::vector<int64_t> ids_the_tokenizer_cannot_write(const tokenizers::Tokenizer& tokenizer, int64_t vocabulary_size);

// idx (B,T) int64 -> (B, T + max_new_tokens): the prompt followed by the generated tokens (fewer
// when options.stop_token stops it). The ids' buffer grows as tokens are written (doubling), so
// memory follows what is generated, not max_new_tokens.
// Runs without recording (no tape), whatever the grad mode.
//
// The window: each step sees the tokens out[start, T) of the T so far. It starts as the last
// context_length tokens of the prompt and grows by one each step until it would hold more
// than context_length; then it restarts from the last keep_when_full tokens:
//
//   keep_when_full = 0 (= context_length)   the window slides: each step past the context sees
//                                           the last context_length tokens (PyTorch's
//                                           idx[:, -context_length:]); the default
//   keep_when_full = K < context_length     it jumps: a step sees K + 1 .. context_length tokens
//
// With use_kv_cache (the default) a fresh window is run once (filling the GPTCache) and each
// step after it costs one position's work; the tokens are identical to recomputing the window
// each step (use_kv_cache = false), for any keep_when_full. A restart shifts every position
// (the window's first token is position 0, for the GPT's absolute position embeddings and
// RoPE's angles alike), so the cache is refilled from the kept tokens: with
// the sliding default that happens at every step past the context, and the cache saves nothing
// there; with K = context_length / 2 it happens once every context_length / 2 steps.
//
// stop_token (>= 0): generation stops after the step in which every row has written that id (an
// end-of-text token), so the result may be shorter than T + max_new_tokens; a row that wrote it
// earlier goes on sampling until the others do (the caller cuts each row at its first one).
//
// on_token, when given, is called after each step with the step's new tokens (B,1): to print
// them as they come, or to time the steps.
Tensor generate(CausalLM& model, const Tensor& idx, int64_t max_new_tokens, const SamplingOptions& options = {},
                Generator* gen = nullptr, const std::function<void(const Tensor&)>& on_token = {});

// The prompt followed by `tokens` generated tokens, as text (generate, above). With
// options.stop_token, the text ends before the first one generated (an end-of-text). With a
// stream, the same text is also written there as it is generated, flushed token by token, a
// character split between tokens (byte-level BPE) once it is whole. ids, when given, receives
// the ids of that text (the prompt's and the generated ones). Only ids the tokenizer can write are
// sampled (ids_the_tokenizer_cannot_write: a padded vocabulary's are not).
std::string write_text(CausalLM& model, const tokenizers::Tokenizer& tokenizer, const std::vector<int64_t>& prompt,
                       int64_t tokens, const SamplingOptions& options, Generator& gen, std::ostream* stream = nullptr,
                       std::vector<int64_t>* ids = nullptr);

}  // namespace tg::models
