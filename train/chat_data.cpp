// train/chat_data.cpp — reading conversations and encoding them with their assistant turns as targets.
#include "train/chat_data.h"

#include <algorithm>
#include <functional>

#include "autograd/error.h"
#include "io/json.h"
#include "io/user_file.h"

namespace tg::train {

namespace {

// One piece of a rendered conversation: its text, and whether its ids are learnt.
struct Piece {
  std::string text;
  bool target;
};

// The conversation's text cut into read-only and learnt pieces, as the header says, each handed
// to emit as it is cut; once emit returns false (the example cannot fit) no more are cut. The
// whole conversation is rendered once; each assistant turn renders the turns before it, so a
// conversation of n turns costs one rendering of all n and those of the prefixes up to the turn
// where it stops fitting (at most about context turns, each adding ids), not n prefixes: a line of
// 100,000 short turns stops after the first few hundred.
void cut_pieces(const Conversation& chat, const tokenizers::ChatSetup& setup, const std::string& end_text,
                const std::function<bool(const Piece&)>& emit) {
  const std::vector<tokenizers::ChatMessage>& m = chat.messages;
  tokenizers::ChatOptions plain = setup.options, prompted = setup.options;
  plain.add_generation_prompt = false;
  prompted.add_generation_prompt = true;
  const std::string full = tokenizers::render_chat(setup.format, m, plain);
  size_t at = 0;  // the end of the pieces so far
  for (size_t k = 0; k < m.size(); ++k) {
    if (m[k].role != "assistant") continue;
    const std::string turn = "message " + std::to_string(k + 1);
    if (k == 0) throw Error(turn + ": the conversation starts with the assistant; an assistant turn answers a user's");
    const std::string before = tokenizers::render_chat(setup.format, {m.begin(), m.begin() + static_cast<std::ptrdiff_t>(k)}, prompted);
    if (!full.starts_with(before) || before.size() < at)
      throw Error(turn + ": the " + std::string(tokenizers::chat_format_name(setup.format)) +
                  " template writes the turns before it differently once the conversation goes on (an earlier "
                  "assistant's reasoning?): its targets cannot be cut out of the whole conversation");
    size_t end = 0;
    if (!end_text.empty()) {  // through the end-of-turn token that follows
      const size_t found = full.find(end_text, before.size());
      if (found == std::string::npos)
        throw Error(turn + ": the template wrote no " + json::quote(end_text) + " after the assistant's turn");
      end = found + end_text.size();
    } else {  // no end token: up to where the next turn starts
      const std::string through = tokenizers::render_chat(setup.format, {m.begin(), m.begin() + static_cast<std::ptrdiff_t>(k + 1)}, plain);
      if (!full.starts_with(through))
        throw Error(turn + ": the template writes this turn differently once the conversation goes on");
      end = through.size();
    }
    if (end == before.size())
      throw Error(turn + ": the assistant's turn is empty and the tokenizer has no end-of-turn token: nothing to learn");
    if (before.size() > at && !emit({full.substr(at, before.size() - at), false})) return;
    if (!emit({full.substr(before.size(), end - before.size()), true})) return;
    at = end;
  }
  if (at < full.size()) emit({full.substr(at), false});
}

}  // namespace

std::vector<Conversation> parse_chats(const std::string& text, const std::string& source) {
  std::vector<Conversation> out;
  for_each_jsonl_object(text, source, "{\"messages\": [{\"role\": ..., \"content\": ...}, ...]}",
                        [&](const json::Value& object, const std::string& where, int64_t line) {
    const json::Value* messages = object.find("messages");
    if (!messages) throw Error(where + ": \"messages\" is missing; each line is {\"messages\": [...]}");
    Conversation chat{tokenizers::chat_messages_from_json(*messages, where), line};
    if (std::none_of(chat.messages.begin(), chat.messages.end(),
                     [](const tokenizers::ChatMessage& m) { return m.role == "assistant"; }))
      throw Error(where + ": no assistant turn: the conversation has nothing to learn");
    out.push_back(std::move(chat));
  });
  if (out.empty()) throw Error(source + ": no conversations (every line is blank)");
  return out;
}

tokenizers::ChatSetup chat_training_setup(const tokenizers::Tokenizer& tokenizer, const std::string& source) {
  tokenizers::ChatSetup setup = tokenizers::chat_setup(tokenizer, "", "--data-format chat: the tokenizer of " + source);
  setup.options.date_string = "26 Jul 2024";  // Llama 3.1's template's own default: the same ids any day
  return setup;
}

std::string chats_as_text(const std::vector<Conversation>& chats) {
  std::string text;
  for (const Conversation& c : chats) text += tokenizers::render_chat(tokenizers::ChatFormat::kTapegrad, c.messages, {}) + "\n";
  return text;
}

EncodedInstructions encode_chats(const std::vector<Conversation>& chats, const tokenizers::Tokenizer& tokenizer,
                                 int64_t context, const std::string& source) {
  const tokenizers::ChatSetup setup = chat_training_setup(tokenizer, source);
  const int64_t end_id = tokenizers::chat_end_token(setup.format, tokenizer);
  const std::string end_text = end_id >= 0 ? tokenizer.decode({end_id}) : "";
  EncodedInstructions out;
  for (const Conversation& c : chats) {
    InstructionExample x;
    x.line = c.line;
    auto add = [&](const Piece& p) {  // false once the example is past context + 1 ids: it is skipped
      const std::vector<int64_t> ids = tokenizer.encode(p.text, /*allow_special=*/true);  // "<|endoftext|>" too
      if (p.target) x.prompt_tokens = static_cast<int64_t>(x.ids.size());  // the last response's start
      x.ids.insert(x.ids.end(), ids.begin(), ids.end());
      x.is_target.insert(x.is_target.end(), ids.size(), p.target ? 1 : 0);
      return static_cast<int64_t>(x.ids.size()) <= context + 1;
    };
    try {
      cut_pieces(c, setup, end_text, add);
    } catch (const Error& e) {
      throw Error(source + ": line " + std::to_string(c.line) + ": " + e.what());
    }
    if (static_cast<int64_t>(x.ids.size()) > context + 1) {
      out.skipped_lines.push_back(c.line);
      continue;
    }
    out.examples.push_back(std::move(x));
  }
  return out;
}

InstructionData load_chat_data(const std::string& jsonl, const std::string& source, const tokenizers::Tokenizer& tokenizer,
                               int64_t context) {
  const std::vector<Conversation> all = parse_chats(jsonl, source);
  auto encode = [&](int64_t first, int64_t last) {
    return encode_chats({all.begin() + first, all.begin() + last}, tokenizer, context, source);
  };
  return split_examples(std::ssize(all), encode, tokenizer, context, source);
}

InstructionData load_example_data(const std::string& format, const std::string& text, const std::string& source,
                                  const tokenizers::Tokenizer& tokenizer, int64_t context) {
  return format == "chat" ? load_chat_data(text, source, tokenizer, context)
                          : load_instruction_data(text, source, tokenizer, context);
}

std::string example_format(std::string_view text) {
  for (std::string_view line : text_lines(text)) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      const json::Value first = json::parse(std::string(line), "first line");
      return first.is_object() && first.contains("messages") ? "chat" : "jsonl";
    } catch (const Error&) {
      return "jsonl";
    }
  }
  return "jsonl";
}

EncodedInstructions encode_example_file(const std::string& format, const std::string& text, const std::string& source,
                                        const tokenizers::Tokenizer& tokenizer, int64_t context, int64_t* count) {
  if (format == "chat") {
    const std::vector<Conversation> all = parse_chats(text, source);
    *count = std::ssize(all);
    return encode_chats(all, tokenizer, context, source);
  }
  const std::vector<Instruction> all = parse_instructions(text, source);
  *count = std::ssize(all);
  return encode_instructions(all, tokenizer, context, source);
}

std::string examples_as_text(const std::string& format, const std::string& text, const std::string& source,
                             size_t* train_bytes) {
  if (format == "chat") {
    const std::vector<Conversation> all = parse_chats(text, source);
    *train_bytes = chats_as_text({all.begin(), all.begin() + train_count(std::ssize(all))}).size();
    return chats_as_text(all);
  }
  const std::vector<Instruction> all = parse_instructions(text, source);
  *train_bytes = instructions_as_text({all.begin(), all.begin() + train_count(std::ssize(all))}).size();
  return instructions_as_text(all);
}

}  // namespace tg::train
