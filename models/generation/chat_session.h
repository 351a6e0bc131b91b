// models/generation/chat_session.h — a conversation with a model: each user turn is added to the messages,
// the whole conversation rendered by the chat template (tokenizers/chat_template.h) with the
// generation prompt, and the model writes the assistant's reply until the template's end token
// (<|im_end|> for ChatML, <|eot_id|> for Llama 3, the eos token for tapegrad's template).
//
// The KV cache is kept across turns: the conversation's ids are compared with those the cache
// holds, the cache is cut back to the prefix they share, and only the rest is run. A template
// that rewrites an earlier turn (Qwen3 drops the reasoning of earlier replies) costs the positions
// from that turn on, not the whole conversation. reset() starts a new conversation.
//
// The context bounds the conversation: a user turn whose prompt (the conversation with it and the
// generation prompt) leaves no room in the model's context is dropped, the conversation kept as it
// was, and reply() throws ChatTurnTooLong saying the sizes; the session goes on. A reply that
// reaches the end of the context stops there (reply_reached_context()), as one that reaches
// max_new_tokens does. Only ids the tokenizer can write are sampled (ids_the_tokenizer_cannot_write).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/random/generator.h"
#include "models/causal_lm.h"
#include "models/generation/generate.h"
#include "tokenizers/chat_template.h"
#include "tokenizers/tokenizer.h"

namespace tg::models {

// reply()'s turn was dropped and the session is as before it: its text is none the tokenizer
// writes (a character a character-level vocabulary lacks, bytes that are not UTF-8) ...
// what() says so for a session that goes on; reason is why, for a caller with no session (a
// conversation read from a file).
struct ChatTurnDropped : Error {
  explicit ChatTurnDropped(const std::string& why) : Error("chat: the turn is dropped: " + why), reason(why) {}
  std::string reason;
};
// ... or it did not fit the model's context: the prompt's tokens leave none for a reply.
struct ChatTurnTooLong : ChatTurnDropped {
  ChatTurnTooLong(const std::string& why, int64_t prompt_tokens, int64_t context)
      : ChatTurnDropped(why), prompt_tokens(prompt_tokens), context(context) {}
  int64_t prompt_tokens, context;
};

class ChatSession {
 public:
  // options.add_generation_prompt is set by reply(); max_new_tokens bounds each reply.
  ChatSession(CausalLM& model, const tokenizers::Tokenizer& tokenizer, tokenizers::ChatFormat format,
              tokenizers::ChatOptions options, SamplingOptions sampling, int64_t max_new_tokens);
  // Adds the message (a system or user turn) without replying.
  void add(const tokenizers::ChatMessage& message);
  // Adds the user's turn and writes the reply: on_text gets its text as it is written (whole
  // characters), and it is returned and added to the conversation as the assistant's turn.
  std::string reply(const std::string& user_text, Generator& gen,
                    const std::function<void(const std::string&)>& on_text = {});
  // The reply to the conversation as it is (its last turn a user's).
  std::string reply_to_conversation(Generator& gen, const std::function<void(const std::string&)>& on_text = {});
  // Whether the last reply stopped at the end of the model's context (not at its end token or
  // max_new_tokens).
  bool reply_reached_context() const { return reply_reached_context_; }
  void reset();
  const std::vector<tokenizers::ChatMessage>& messages() const { return messages_; }
  int64_t end_token() const { return end_token_; }
  int64_t cached_positions() const { return cache_.length(); }

 private:
  CausalLM& model_;
  const tokenizers::Tokenizer& tokenizer_;
  tokenizers::ChatFormat format_;
  tokenizers::ChatOptions options_;
  SamplingOptions sampling_;
  int64_t max_new_tokens_;
  int64_t end_token_ = -1;
  std::vector<tokenizers::ChatMessage> messages_;
  GPTCache cache_;
  std::vector<int64_t> cached_ids_;  // the ids whose keys and values the cache holds
  bool reply_reached_context_ = false;

  // The prompt's ids (the conversation with the generation prompt); ChatTurnTooLong when they
  // leave no room for a reply.
  std::vector<int64_t> prompt_ids() const;
};

}  // namespace tg::models
