// models/chat_session.cpp — ChatSession: render, run what the cache lacks, write until the end token.
#include "models/chat_session.h"

#include <algorithm>

#include "autograd/error.h"
#include "autograd/io/json.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::models {

ChatSession::ChatSession(CausalLM& model, const tokenizers::Tokenizer& tokenizer, tokenizers::ChatFormat format,
                         tokenizers::ChatOptions options, SamplingOptions sampling, int64_t max_new_tokens)
    : model_(model),
      tokenizer_(tokenizer),
      format_(format),
      options_(std::move(options)),
      sampling_(sampling),
      max_new_tokens_(max_new_tokens),
      end_token_(tokenizers::chat_end_token(format, tokenizer)) {
  sampling_.validate();
}

void ChatSession::add(const tokenizers::ChatMessage& message) { messages_.push_back(message); }

void ChatSession::reset() {
  messages_.clear();
  cache_.clear();
  cached_ids_.clear();
}

std::string ChatSession::reply(const std::string& user_text, Generator& gen,
                               const std::function<void(const std::string&)>& on_text) {
  messages_.push_back({"user", user_text, std::nullopt});
  return reply_to_conversation(gen, on_text);
}

std::string ChatSession::reply_to_conversation(Generator& gen, const std::function<void(const std::string&)>& on_text) {
  options_.add_generation_prompt = true;
  const std::vector<int64_t> ids = tokenizer_.encode(tokenizers::render_chat(format_, messages_, options_));
  if (static_cast<int64_t>(ids.size()) + max_new_tokens_ > model_.context_length())
    throw Error("chat: the conversation (" + std::to_string(ids.size()) + " tokens) and a reply of up to " +
                std::to_string(max_new_tokens_) + " exceed the model's context (" +
                std::to_string(model_.context_length()) + "); /reset starts over");
  NoGradGuard no_grad;
  // the cache keeps the prefix it shares with the conversation; at least one position is run
  size_t shared = 0;
  while (shared < cached_ids_.size() && shared < ids.size() && cached_ids_[shared] == ids[shared]) ++shared;
  shared = std::min(shared, ids.size() - 1);
  cache_.truncate(static_cast<int64_t>(shared));
  cached_ids_.assign(ids.begin(), ids.end());
  const std::vector<int64_t> rest(ids.begin() + static_cast<std::ptrdiff_t>(shared), ids.end());
  Tensor logits = model_.forward(from_vector(rest, {1, static_cast<int64_t>(rest.size())}), cache_);  // (1,t,V)
  std::vector<int64_t> written;
  std::string pending, text;  // the bytes not yet whole characters; the reply
  for (int64_t k = 0; k < max_new_tokens_; ++k) {
    const int64_t next = sample_next_token(logits.select(1, logits.size(1) - 1), sampling_, &gen).item<int64_t>();
    if (next == end_token_) break;
    written.push_back(next);
    pending += tokenizer_.decode({next});
    const size_t whole = json::utf8_whole_prefix(pending);
    if (on_text && whole > 0) on_text(pending.substr(0, whole));
    text += pending.substr(0, whole);
    pending.erase(0, whole);
    if (k + 1 == max_new_tokens_) break;
    logits = model_.forward(from_vector(std::vector<int64_t>{next}, {1, 1}), cache_);
    cached_ids_.push_back(next);
  }
  if (on_text && !pending.empty()) on_text(pending);
  text += pending;
  messages_.push_back({"assistant", text, std::nullopt});
  return text;
}

}  // namespace tg::models
