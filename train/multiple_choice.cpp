// train/multiple_choice.cpp — the harness's requests, their log-likelihoods (from a shared KV
// cache, or each pair whole) and acc / acc_norm (see the header).
#include "train/multiple_choice.h"

#include <algorithm>
#include <cmath>

#include "autograd/autocast.h"
#include "autograd/error.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::train {

namespace {

// log p(id) under one row of logits: logits[id] - logsumexp(logits), in float64.
double log_prob(const float* logits, int64_t vocab, int64_t id) {
  double max = logits[0];
  for (int64_t v = 1; v < vocab; ++v) max = std::max(max, static_cast<double>(logits[v]));
  double sum = 0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
  return static_cast<double>(logits[id]) - max - std::log(sum);
}

// The sum of log p(targets[t]) over the rows of logits (T,V), row first_row + t for targets[t].
double sum_log_probs(const Tensor& logits, int64_t first_row, const std::vector<int64_t>& targets,
                     int64_t count) {
  const Tensor rows = logits.contiguous();
  const int64_t vocab = rows.size(-1);
  const float* data = rows.data_ptr<float>();
  double total = 0;
  for (int64_t t = 0; t < count; ++t) {
    const int64_t id = targets[static_cast<size_t>(t)];
    if (id < 0 || id >= vocab)
      throw Error("multiple choice: token id " + std::to_string(id) + " is outside the model's vocabulary (" +
                  std::to_string(vocab) + ")");
    total += log_prob(data + (first_row + t) * vocab, vocab, id);
  }
  return total;
}

Tensor row_of(const std::vector<int64_t>& ids) { return from_vector(ids, {1, static_cast<int64_t>(ids.size())}); }

// The harness's scoring of one pair whole: the last context + 1 ids of context + continuation, the
// last dropped, and the continuation's ids scored on the last positions.
double whole_loglikelihood(models::CausalLM& model, const std::vector<int64_t>& context,
                           const std::vector<int64_t>& continuation, int64_t* tokens_run) {
  std::vector<int64_t> ids = context;
  ids.insert(ids.end(), continuation.begin(), continuation.end());
  const int64_t keep = std::min<int64_t>(static_cast<int64_t>(ids.size()), model.context_length() + 1);
  const int64_t n = static_cast<int64_t>(continuation.size());
  if (n > keep - 1)
    throw Error("multiple choice: a continuation of " + std::to_string(n) + " tokens does not fit the model's context (" +
                std::to_string(model.context_length()) + ")");
  ids.erase(ids.begin(), ids.end() - keep);
  ids.pop_back();
  const int64_t T = static_cast<int64_t>(ids.size());
  const Tensor logits = model.forward(row_of(ids))[0];  // (T,V)
  if (tokens_run) *tokens_run += T;
  return sum_log_probs(logits, T - n, continuation, n);
}

}  // namespace

ChoiceRequests encode_choices(const tokenizers::Tokenizer& tokenizer, const std::string& context_text,
                              const std::vector<std::string>& choices) {
  ChoiceRequests out;
  size_t end = context_text.size();
  while (end > 0 && is_python_space(context_text[end - 1])) --end;
  const std::string context = context_text.substr(0, end), moved = context_text.substr(end);
  if (context.empty()) {  // the harness's prefix token, then the continuation alone
    const tokenizers::HfTokenizer* hf = tokenizer.hf();
    const int64_t prefix = hf && hf->bos_id() >= 0 ? hf->bos_id() : tokenizer.end_of_text_id();
    if (prefix < 0)
      throw Error("multiple choice: the context is empty and the " + std::string(tokenizer.type()) +
                  " tokenizer has no BOS or end-of-text token to start from");
    out.context = {prefix};
    for (const std::string& choice : choices) {
      std::vector<int64_t> ids = tokenizer.encode(moved + " " + choice);
      if (!ids.empty() && ids[0] == prefix) ids.erase(ids.begin());
      if (ids.empty()) throw Error("multiple choice: the choice " + choice + " has no tokens");
      out.continuations.push_back(std::move(ids));
    }
    return out;
  }
  out.context = tokenizer.encode_with_bos(context);
  for (const std::string& choice : choices) {
    const std::vector<int64_t> whole = tokenizer.encode_with_bos(context + moved + " " + choice);
    if (whole.size() <= out.context.size())
      throw Error("multiple choice: the choice \"" + choice + "\" adds no tokens to the context");
    out.continuations.emplace_back(whole.begin() + static_cast<std::ptrdiff_t>(out.context.size()), whole.end());
  }
  return out;
}

std::vector<double> choice_loglikelihoods_whole(models::CausalLM& model, const ChoiceRequests& requests,
                                                int64_t* tokens_run) {
  NoGradGuard no_grad;
  std::vector<double> out;
  for (const auto& continuation : requests.continuations)
    out.push_back(whole_loglikelihood(model, requests.context, continuation, tokens_run));
  return out;
}

std::vector<double> choice_loglikelihoods(models::CausalLM& model, const ChoiceRequests& requests, int64_t* tokens_run) {
  NoGradGuard no_grad;
  const int64_t C = static_cast<int64_t>(requests.context.size());
  size_t longest = 0;
  for (const auto& continuation : requests.continuations) longest = std::max(longest, continuation.size());
  if (C + static_cast<int64_t>(longest) - 1 > model.context_length())  // the harness cuts the context's left
    return choice_loglikelihoods_whole(model, requests, tokens_run);
  models::GPTCache cache;
  const Tensor context_logits = model.forward(row_of(requests.context), cache)[0];  // (C,V)
  const Tensor last = context_logits.narrow(0, C - 1, 1);                           // (1,V): predicts id 0
  if (tokens_run) *tokens_run += C;
  std::vector<double> out;
  for (const auto& continuation : requests.continuations) out.push_back(sum_log_probs(last, 0, continuation, 1));
  if (longest < 2) return out;  // one id each (MMLU's letters): the context's logits were all
  // Every choice's ids but its last, as one batch (K, longest - 1) after the context's cache repeated
  // K times; a shorter row is padded on the right, which no earlier position attends to.
  const int64_t K = static_cast<int64_t>(requests.continuations.size()), L = static_cast<int64_t>(longest) - 1;
  std::vector<int64_t> inputs(static_cast<size_t>(K * L), 0);
  for (int64_t k = 0; k < K; ++k) {
    const auto& continuation = requests.continuations[static_cast<size_t>(k)];
    std::copy(continuation.begin(), continuation.end() - 1, inputs.begin() + k * L);
    if (tokens_run) *tokens_run += static_cast<int64_t>(continuation.size()) - 1;
  }
  cache.repeat_batch(K);
  const Tensor logits = model.forward(from_vector(inputs, {K, L}), cache);  // (K,L,V)
  for (int64_t k = 0; k < K; ++k) {
    const auto& continuation = requests.continuations[static_cast<size_t>(k)];
    const std::vector<int64_t> targets(continuation.begin() + 1, continuation.end());  // predicted by rows 0..n-2
    out[static_cast<size_t>(k)] += sum_log_probs(logits[k], 0, targets, static_cast<int64_t>(targets.size()));
  }
  return out;
}

int64_t character_count(const std::string& text) {
  return std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

ItemScore score_item(std::vector<double> loglikelihoods, const std::vector<std::string>& choices, int64_t label) {
  if (loglikelihoods.size() != choices.size() || choices.empty())
    throw Error("score_item: " + std::to_string(loglikelihoods.size()) + " log-likelihoods for " +
                std::to_string(choices.size()) + " choices");
  ItemScore s;
  s.label = label;
  double best = 0, best_norm = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    const int64_t length = character_count(choices[i]);
    s.lengths.push_back(length);
    const double ll = loglikelihoods[i], norm = ll / static_cast<double>(length);  // an empty choice: -inf (numpy's)
    if (i == 0 || ll > best) {
      best = ll;
      s.pred = static_cast<int64_t>(i);
    }
    if (i == 0 || norm > best_norm) {
      best_norm = norm;
      s.pred_norm = static_cast<int64_t>(i);
    }
  }
  s.loglikelihoods = std::move(loglikelihoods);
  return s;
}

TaskScore summarize(const std::vector<ItemScore>& items) {
  TaskScore t;
  t.items = static_cast<int64_t>(items.size());
  if (items.empty()) return t;
  std::vector<double> right, right_norm;
  for (const ItemScore& s : items) {
    right.push_back(s.pred == s.label ? 1.0 : 0.0);
    right_norm.push_back(s.pred_norm == s.label ? 1.0 : 0.0);
  }
  t.acc = mean_of(right);
  t.acc_norm = mean_of(right_norm);
  t.acc_stderr = mean_stderr(right);
  t.acc_norm_stderr = mean_stderr(right_norm);
  return t;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double x : values) sum += x;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

std::optional<double> mean_stderr(const std::vector<double>& values) {
  if (values.size() < 2) return std::nullopt;
  const double n = static_cast<double>(values.size()), m = mean_of(values);
  double squares = 0;
  for (double x : values) squares += (x - m) * (x - m);
  return std::sqrt(squares / (n - 1) / n);
}

std::vector<ChoiceItem> read_eval_task(const std::string& spec) {
  TaskSpec parsed;
  try {
    parsed = parse_task_spec(spec);
  } catch (const Error& e) {
    throw Error(std::string("--eval-task ") + e.what());
  }
  return read_task(parsed.format, parsed.path, "--eval-task");
}

EncodedTask encode_task(const std::string& spec, const std::vector<ChoiceItem>& items, int64_t limit,
                        const tokenizers::Tokenizer& tokenizer, int64_t context_length) {
  const size_t n = limit > 0 ? std::min(items.size(), static_cast<size_t>(limit)) : items.size();
  EncodedTask task;
  task.spec = spec;
  for (size_t i = 0; i < n; ++i) {
    const ChoiceItem& item = items[i];
    const std::string where = "--eval-task " + spec + ": line " + std::to_string(item.line) + ": ";
    try {
      task.requests.push_back(encode_choices(tokenizer, item_context(items, i, 0, 0), item.choices));
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
    const std::vector<std::vector<int64_t>>& continuations = task.requests.back().continuations;
    for (size_t k = 0; k < continuations.size(); ++k)
      if (static_cast<int64_t>(continuations[k].size()) > context_length)
        throw Error(where + "choice " + std::to_string(k) + " is " + std::to_string(continuations[k].size()) +
                    " tokens, more than the model's context (" + std::to_string(context_length) + ")");
    task.choices.push_back(item.choices);
    task.labels.push_back(item.label);
    task.lines.push_back(item.line);
  }
  return task;
}

TaskScore score_task(models::CausalLM& model, const EncodedTask& task, ScalarType products) {
  const bool was_training = model.is_training();
  model.eval();
  std::vector<ItemScore> scores;
  try {
    AutocastGuard autocast(products);
    for (size_t i = 0; i < task.requests.size(); ++i)
      scores.push_back(score_item(choice_loglikelihoods(model, task.requests[i]), task.choices[i], task.labels[i]));
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  return summarize(scores);
}

}  // namespace tg::train
