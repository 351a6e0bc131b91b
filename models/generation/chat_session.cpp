// models/generation/chat_session.cpp — ChatSession: render, run what the cache lacks, write until the end token.
#include "models/generation/chat_session.h"

#include <algorithm>

#include "autograd/error.h"
#include "io/json.h"
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
  for (int64_t id : ids_the_tokenizer_cannot_write(tokenizer, model.vocab_size()))  // the reply is decoded
    sampling_.suppress_tokens.push_back(id);
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
  try {
    return reply_to_conversation(gen, on_text);
  } catch (const ChatTurnDropped&) {
    messages_.pop_back();  // the conversation as it was before the turn
    throw;
  }
}

std::vector<int64_t> ChatSession::prompt_ids() const {
  tokenizers::ChatOptions prompted = options_;
  prompted.add_generation_prompt = true;
  auto ids_of = [&](const std::vector<tokenizers::ChatMessage>& messages) {
    return static_cast<int64_t>(tokenizer_.encode(tokenizers::render_chat(format_, messages, prompted)).size());
  };
  std::vector<int64_t> ids;
  try {  // the turns before the last were written already: an error here is the last turn's
    ids = tokenizer_.encode(tokenizers::render_chat(format_, messages_, prompted));
  } catch (const Error& e) {
    throw ChatTurnDropped(e.what());
  }
  const int64_t context = model_.context_length(), n = static_cast<int64_t>(ids.size());
  if (n < context) return ids;  // room for at least one token of the reply, and its position
  // the last turn with the system message (if any) alone: does /reset help?
  std::vector<tokenizers::ChatMessage> alone;
  if (messages_.size() > 1 && messages_.front().role == "system") alone.push_back(messages_.front());
  alone.push_back(messages_.back());
  const int64_t alone_ids = ids_of(alone);
  const std::string sizes = "the conversation with it is " + std::to_string(n) + " tokens, and the model's context (" +
                            std::to_string(context) + ") leaves no room for a reply";
  if (alone_ids >= context || alone.size() == messages_.size())
    throw ChatTurnTooLong(sizes + "; even alone it is " + std::to_string(alone_ids) + " tokens: write a shorter one", n,
                          context);
  throw ChatTurnTooLong(sizes + "; /reset starts over (alone it is " + std::to_string(alone_ids) + " tokens)", n, context);
}

std::string ChatSession::reply_to_conversation(Generator& gen, const std::function<void(const std::string&)>& on_text) {
  const std::vector<int64_t> ids = prompt_ids();
  const int64_t context = model_.context_length();
  reply_reached_context_ = false;
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
    const int64_t position = static_cast<int64_t>(ids.size()) + k;  // of the token written now
    const int64_t next = sample_next_token(logits.select(1, logits.size(1) - 1), sampling_, &gen, position - 1).item<int64_t>();
    if (next == end_token_) break;
    written.push_back(next);
    pending += tokenizer_.decode({next});
    const size_t whole = json::utf8_whole_prefix(pending);
    if (on_text && whole > 0) on_text(pending.substr(0, whole));
    text += pending.substr(0, whole);
    pending.erase(0, whole);
    if (k + 1 == max_new_tokens_) break;
    if (position >= context) {  // the context is full: no position to run this token at
      reply_reached_context_ = true;
      break;
    }
    logits = model_.forward(from_vector(std::vector<int64_t>{next}, {1, 1}), cache_);
    cached_ids_.push_back(next);
  }
  if (on_text && !pending.empty()) on_text(pending);
  text += pending;
  messages_.push_back({"assistant", text, std::nullopt});
  return text;
}

}  // namespace tg::models
