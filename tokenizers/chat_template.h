// tokenizers/chat_template.h — conversations rendered as text the way a model family's chat
// template (tokenizer_config.json's "chat_template", a Jinja program) renders them, written out by
// hand for the templates tapegrad knows (ChatFormat, below). Each is tested against the real
// template run by a Jinja engine (tests/reference/make_chat_reference.mjs, @huggingface/jinja) on
// the files of tests/reference/chat_reference.json. Tools and tool calls (and the "tool" turns
// that answer them) are not rendered: a message with tool_calls is an error.
//
// Read chat_setup (what a model chats with) and render_chat in chat_template.cpp first.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"
#include "tokenizers/tokenizer.h"

namespace tg::tokenizers {

// The prompt of an instruction, up to where the response starts: the one template of the
// project (train_gpt's instruction data, train/instructions.h; the tapegrad chat format):
//   "Below is an instruction that describes a task. Write a response that appropriately completes
//    the request.\n\n### Instruction:\n{instruction}"
//   + "\n\n### Input:\n{input}"   only when input is not empty
//   + "\n\n### Response:\n"
std::string alpaca_prompt(const std::string& instruction, const std::string& input);

// The templates tapegrad renders, by name:
//   qwen3     ChatML: "<|im_start|>{role}\n{content}<|im_end|>\n" per turn. An assistant turn after
//             the last user query shows its reasoning as "<think>\n{reasoning}\n</think>\n\n", the
//             earlier ones only their answer (a "<think>...</think>" written in the content is cut
//             out); the generation prompt "<|im_start|>assistant\n", and with enable_thinking
//             false an empty "<think>\n\n</think>\n\n" after it
//   qwen2.5   ChatML with Qwen2.5's default system turn ("You are Qwen, created by Alibaba Cloud.
//             You are a helpful assistant.") when the conversation has none
//   llama3    Llama 3's: bos_token, then "<|start_header_id|>{role}<|end_header_id|>\n\n{content,
//             trimmed}<|eot_id|>" per turn, and always the assistant header at the end
//   llama3.1  Llama 3.1 / 3.2 Instruct's: bos_token, a system turn that always comes, with
//             "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n" before the system
//             message (trimmed), then the turns as llama3's, and the assistant header when asked
//   tapegrad  tapegrad's instruction template (alpaca_prompt, above): each user turn
//             as its "### Instruction:" prompt, each assistant turn its text and the eos token
enum class ChatFormat { kQwen3, kQwen25, kLlama3, kLlama31, kTapegrad };

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
  std::optional<std::string> reasoning_content;  // an assistant's reasoning, given apart (qwen3)
};

struct ChatOptions {
  bool add_generation_prompt = false;  // end with the assistant's header: what the model answers after
  bool enable_thinking = true;         // qwen3: false writes an empty think block after that header
  std::string bos_token;               // llama3, llama3.1: written first
  std::string eos_token;               // tapegrad: after each assistant turn
  std::string date_string;             // llama3.1's "Today Date"; "" = today, as transformers' strftime_now
};

// "qwen3", "qwen2.5", "llama3", "llama3.1", "tapegrad" and back; an unknown name is an Error
// listing them.
ChatFormat chat_format_from_name(const std::string& name);
const char* chat_format_name(ChatFormat format);
// The format of a chat_template text, chosen by what the template writes, or an Error naming
// source and the formats tapegrad renders (--chat-format then names one).
ChatFormat chat_format_of_template(const std::string& chat_template, const std::string& source);

// A JSON array of {"role": ..., "content": ..., ["reasoning_content": ...]}: roles system (first
// only, for the formats that have one), user and assistant; where names it in errors
// ("chat.json", "data.jsonl: line 3").
std::vector<ChatMessage> chat_messages_from_json(const json::Value& messages, const std::string& where);

// The conversation as the template writes it.
std::string render_chat(ChatFormat format, const std::vector<ChatMessage>& messages, const ChatOptions& options);

// What a model with this tokenizer chats with (generate --chat, train_gpt --data-format chat):
//   format     format_name when given ("" = none), else the format of the tokenizer's
//              chat_template (tokenizer_config.json's), else tapegrad's own for tapegrad's and
//              GPT-2's tokenizers; a Hugging Face tokenizer without a template is an Error naming
//              where (the model folder) and asking for a format
//   options    bos_token (tokenizer_config.json's) and eos_token (the end-of-text token's text)
struct ChatSetup {
  ChatFormat format = ChatFormat::kTapegrad;
  ChatOptions options;
};
ChatSetup chat_setup(const Tokenizer& tokenizer, const std::string& format_name, const std::string& where);

// The template's end-of-turn token in this tokenizer (<|im_end|>, <|eot_id|>, or for tapegrad's
// the end-of-text), or -1 when it has none.
int64_t chat_end_token(ChatFormat format, const Tokenizer& tokenizer);

}  // namespace tg::tokenizers
