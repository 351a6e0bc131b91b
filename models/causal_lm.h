// models/causal_lm.h — what every decoder-only language model of tapegrad offers: the GPT of
// models/gpt.h and the Llama / Qwen family of models/llama.h. Generation (models/generation/generate.h)
// takes any of them, and train::Trainer trains any of them with the same loop.
//
// Read first: class CausalLM, whose comment lists what a model offers; then Checkpointing.
#pragma once
#include <cstdint>
#include <string>

#include "models/kv_cache.h"
#include "nn/module.h"

namespace tg::models {

// What a block recomputes in backward instead of keeping (train_gpt --checkpoint-activations):
//   none   nothing: the block keeps everything its backward reads
//   every  the whole block: it keeps only its input x (B,T,C), and its backward runs its forward
//          again (the most memory saved, one more forward of every block)
//   ffn    the feed-forward only: its hidden activations, the largest tensors a block keeps, are
//          made again from its input (the normed (B,T,C))
enum class Checkpointing { none, every, ffn };
// "none", "every", "ffn" <-> the enum; an unknown name throws tg::Error listing the three.
Checkpointing checkpointing_from_name(const std::string& name);
std::string checkpointing_name(Checkpointing mode);

// The ids a model's forward takes: int64 (B,T), whose positions past .. past+T-1 (the cached ones
// first) fit in the model's `context` (config.json's field `context_field` says it), and a
// key_padding_mask, when defined, bool of the ids' shape. Each is an Error naming `model` and what
// was given.
void check_token_ids(const Tensor& idx, int64_t past, int64_t context, const std::string& context_field,
                     const std::string& model, const Tensor& key_padding_mask = Tensor());

// A decoder-only language model:
//
//   forward(idx)          idx (B,T) int64 token ids -> logits (B,T,V)
//   forward(idx, cache)   the tokens after the cache's (B,T) -> logits (B,T,V); each layer's keys
//                         and values are appended to its KVCache (models/kv_cache.h). Under
//                         NoGradGuard only.
//   forward(idx, mask)    with key_padding_mask bool (B,T), true = padded: no position attends
//                         to a padded one (undefined: none)
//   hidden_states(idx, mask)  the same without the output head: (B,T,C), for a head of one's own
//                         (models/sequence_classification.h)
//   loss(idx, targets, mask, loss_chunk)   the training loss: the mean cross entropy over the
//                         targets (B,T) that are not -100; loss_chunk > 0: the head and the loss
//                         that many rows at a time (nn/chunked_loss.h)
//   set_checkpointing(mode)   what every block recomputes in backward (Checkpointing, above)
//   context_length()      the most positions a forward may see
//   vocab_size()          V
class CausalLM : public nn::Module {
 public:
  using nn::Module::Module;
  using nn::Module::forward;
  virtual Tensor forward(const Tensor& idx, GPTCache& cache) = 0;
  virtual Tensor forward(const Tensor& idx, const Tensor& key_padding_mask) = 0;
  // forward without the output head: the final norm's output (B,T,C)
  virtual Tensor hidden_states(const Tensor& idx, const Tensor& key_padding_mask) = 0;
  virtual Tensor loss(const Tensor& idx, const Tensor& targets, const Tensor& key_padding_mask = Tensor(),
                      int64_t loss_chunk = 0) = 0;
  virtual void set_checkpointing(Checkpointing mode) = 0;
  virtual Checkpointing checkpointing() const = 0;
  virtual int64_t context_length() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t hidden_size() const = 0;  // the width of hidden_states (C)
};

}  // namespace tg::models
