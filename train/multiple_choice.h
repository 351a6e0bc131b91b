// train/multiple_choice.h — scoring multiple choice by log-likelihood, as lm-evaluation-harness
// does (lm_eval/api/model.py: loglikelihood, _encode_pair; api/task.py: process_results).
//
// Read first: encode_choices (an item's requests), choice_loglikelihoods (the score, and the fast
// and the plain way to compute it), score_item and summarize (acc, acc_norm); score_task is what a
// training run's --eval-task calls.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "models/causal_lm.h"
#include "tokenizers/tokenizer.h"
#include "train/task_formats.h"

namespace tg::train {

struct ChoiceRequests {
  std::vector<int64_t> context;                      // at least one id
  std::vector<std::vector<int64_t>> continuations;  // one per choice, each at least one id
};

// The harness's requests for one item. Each choice c of an item is the continuation " " + c (the
// target delimiter) of the item's context (train/task_formats.h: item_context). Whitespace that
// ends the context moves to the front of the continuation. Then, as _encode_pair does for a decoder:
//   context_ids      = encode(context)
//   continuation_ids = encode(context + continuation)[len(context_ids):]
// encode is Tokenizer::encode_with_bos: the BOS token first where the tokenizer adds one (Llama 3's
// <|begin_of_text|>; GPT-2's and Qwen's add none), as transformers' tokenizer.encode does for the
// harness. An empty context is the harness's prefix token alone: BOS, else the end-of-text token
// (GPT-2's <|endoftext|>), with the continuation encoded by itself. A continuation with no ids is
// an Error.
ChoiceRequests encode_choices(const tokenizers::Tokenizer& tokenizer, const std::string& context,
                              const std::vector<std::string>& choices);

// Each choice's log-likelihood, under NoGradGuard, the model in eval mode. tokens_run, when given,
// grows by the ids the model ran.
//
//   loglikelihood(choice) = sum over the continuation's ids of log p(id | the ids before it)
//
// The id at continuation position 0 is predicted by the logits of the context's last position.
// The log-softmax is taken in float64 over the model's float32 logits. When context +
// continuation is more than the model's context + 1 ids, the harness keeps the last context + 1
// and drops the last (the left of the context goes); so do we.
//
// The fast way (choice_loglikelihoods): the context runs once, filling a KV cache
// (models/kv_cache.h); the cache is then repeated for the K choices and their ids but the last run
// from it as one batch (K, longest - 1), each row padded on the right (causal attention: no real
// position sees the padding; tokens_run counts the real ids alone). The plain way
// (choice_loglikelihoods_whole) runs each context + continuation from scratch, as the harness
// does; it is the oracle the fast one is tested against, and it is what a choice that does not
// fit the context takes.
std::vector<double> choice_loglikelihoods(models::CausalLM& model, const ChoiceRequests& requests,
                                          int64_t* tokens_run = nullptr);
std::vector<double> choice_loglikelihoods_whole(models::CausalLM& model, const ChoiceRequests& requests,
                                                int64_t* tokens_run = nullptr);

// The metrics (per item, then their mean over the items, with the standard error of the mean,
// sqrt(sample variance / n), as the harness's mean_stderr):
//   acc       1 when argmax loglikelihood is the label (the first of equal ones, as numpy's argmax)
//   acc_norm  the same with loglikelihood / len(choice), choice's length in characters (Unicode
//             code points, Python's len) without the " " before it, as the harness counts it.
//             llm.c's HellaSwag script divides by the ending's tokens instead.
struct ItemScore {
  std::vector<double> loglikelihoods;
  std::vector<int64_t> lengths;  // each choice's characters
  int64_t pred = 0, pred_norm = 0, label = 0;
};
ItemScore score_item(std::vector<double> loglikelihoods, const std::vector<std::string>& choices, int64_t label);

// The number of Unicode code points of a UTF-8 text (bytes that do not continue one).
int64_t character_count(const std::string& text);

struct TaskScore {
  int64_t items = 0;
  double acc = 0, acc_norm = 0;
  std::optional<double> acc_stderr, acc_norm_stderr;  // none for a single item
};
TaskScore summarize(const std::vector<ItemScore>& items);
// The values' mean (0 for none), and the harness's mean_stderr: sqrt(sample variance / n), none for
// fewer than 2 values.
double mean_of(const std::vector<double>& values);
std::optional<double> mean_stderr(const std::vector<double>& values);

// A task scored again at every evaluation of a training run (train_gpt --eval-task FORMAT:FILE):
// its first `limit` items (0: all), zero shots, read and encoded once, before the run starts. A
// text the tokenizer cannot encode (a character model knows only its training text's characters)
// or a choice longer than the model's context is an Error naming the flag, the file and the line.
struct EncodedTask {
  std::string spec;  // FORMAT:FILE as given
  std::vector<ChoiceRequests> requests;
  std::vector<std::vector<std::string>> choices;
  std::vector<int64_t> labels, lines;
};
// The spec's file read (train/task_formats.h), its errors naming --eval-task: before a model is built.
std::vector<ChoiceItem> read_eval_task(const std::string& spec);
EncodedTask encode_task(const std::string& spec, const std::vector<ChoiceItem>& items, int64_t limit,
                        const tokenizers::Tokenizer& tokenizer, int64_t context_length);
// acc and acc_norm over the task's items, the model in eval mode (put back as it was after) and its
// matrix products in `products` (a bf16 run's evaluation is bf16 too).
TaskScore score_task(models::CausalLM& model, const EncodedTask& task, ScalarType products = kFloat32);

}  // namespace tg::train
