// train/chat_data.h — conversations for fine-tuning (train_gpt --data-format chat): one JSON
// object a line,
//
//   {"messages": [{"role": "system", "content": "Be brief."},
//                 {"role": "user", "content": "Plural of mouse?"},
//                 {"role": "assistant", "content": "mice"}, ...]}
//
// Read first: parse_chats (what a line may hold), then encode_chats (how a conversation is
// rendered and which of its ids are learnt). The batches, the split and the evaluation are the
// instruction data's (train/instructions.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/chat_template.h"
#include "tokenizers/tokenizer.h"
#include "train/instructions.h"

namespace tg::train {

struct Conversation {
  std::vector<tokenizers::ChatMessage> messages;
  int64_t line = 0;  // 1-based, in the file
};

// The conversations of a JSONL text: roles system (first only), user and assistant, as generate
// --chat-messages reads them (tokenizers::chat_messages_from_json); other keys of the line are
// ignored; blank lines are skipped. Every message starts with source and the line:
// "chats.jsonl: line 3: not JSON: ...", "...: \"messages\" is missing", "...: message 2: unknown
// role \"tool\" ...", "...: no assistant turn: nothing to learn". A text of blank lines is an error.
std::vector<Conversation> parse_chats(const std::string& text, const std::string& source);

// The template and options the conversations are rendered with (tokenizers::chat_setup:
// tokenizer_config.json's chat_template, else tapegrad's own). Llama 3.1's date line is fixed to
// the template's own default, "26 Jul 2024", so the ids of a run do not change with the day.
tokenizers::ChatSetup chat_training_setup(const tokenizers::Tokenizer& tokenizer, const std::string& source);

// What a tokenizer made from the data learns from (char or bpe from scratch): each conversation
// rendered with tapegrad's template, one after another.
std::string chats_as_text(const std::vector<Conversation>& chats);

// The conversations encoded with their targets, those over context + 1 ids skipped (by line);
// errors name source and the line (a character the vocabulary lacks, a template that writes an
// earlier turn differently once later ones follow). Each conversation is rendered by the chat
// template its tokenizer chats with (chat_training_setup), and only the assistant turns are
// learnt: for assistant turn k the template's text splits at
//
//   start_k = the length of render(messages before k, with the generation prompt)
//   end_k   = just after the template's end-of-turn token that follows (<|im_end|>, <|eot_id|>,
//             the end-of-text), or where the next turn starts when the tokenizer has none
//
// and the pieces are encoded apart, so each boundary is exact whatever the tokenizer; the ids of
// [start_k, end_k) are targets (InstructionExample::is_target), the rest (the system and user
// turns, the headers) are read only.
EncodedInstructions encode_chats(const std::vector<Conversation>& chats, const tokenizers::Tokenizer& tokenizer,
                                 int64_t context, const std::string& source);

// A chat fine-tuning run's data: parse_chats, then split_examples (train/instructions.h). The
// batches, the split (the first 90% of the lines train), the skipping of conversations longer than
// the context and the evaluation are the instruction data's.
InstructionData load_chat_data(const std::string& jsonl, const std::string& source, const tokenizers::Tokenizer& tokenizer,
                               int64_t context);

// --- either kind of example data: --data-format jsonl (instructions.h) or chat (above) --------------

// "chat" when the text's first line that is not blank is a conversation (an object with
// "messages"), else "jsonl": how train_gpt and evaluate tell the two files apart. A first line
// that is not JSON is "jsonl" (reading the examples then says what is wrong with it).
std::string example_format(std::string_view text);

// The fine-tuning run's data of that format, split.
InstructionData load_example_data(const std::string& format, const std::string& text, const std::string& source,
                                  const tokenizers::Tokenizer& tokenizer, int64_t context);
// Every example of the file encoded (train_gpt --eval-only --data FILE); *count: how many it has.
EncodedInstructions encode_example_file(const std::string& format, const std::string& text, const std::string& source,
                                        const tokenizers::Tokenizer& tokenizer, int64_t context, int64_t* count);
// The text a char or bpe tokenizer learns from, and in *train_bytes how many of its first bytes
// are the training split's examples.
std::string examples_as_text(const std::string& format, const std::string& text, const std::string& source,
                             size_t* train_bytes);

}  // namespace tg::train
