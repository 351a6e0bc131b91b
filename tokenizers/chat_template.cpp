// tokenizers/chat_template.cpp — the chat templates tapegrad knows, each the Jinja template's
// statements written out in C++ (chat_template.h), with Python's string methods where the template
// calls them (strip('\n'), split('</think>')[-1], the trim filter).
#include "tokenizers/chat_template.h"

#include <ctime>

#include "autograd/error.h"
#include "io/flags.h"
#include "tokenizers/unicode_classes.h"

namespace tg::tokenizers {

std::string alpaca_prompt(const std::string& instruction, const std::string& input) {
  std::string prompt =
      "Below is an instruction that describes a task. Write a response that appropriately completes the request."
      "\n\n### Instruction:\n" +
      instruction;
  if (!input.empty()) prompt += "\n\n### Input:\n" + input;
  return prompt + "\n\n### Response:\n";
}

namespace {

// --- Python's string methods, as the templates use them ----------------------------------------------

std::string lstrip_newlines(const std::string& s) { return s.substr(std::min(s.find_first_not_of('\n'), s.size())); }
std::string rstrip_newlines(const std::string& s) {
  const size_t last = s.find_last_not_of('\n');
  return last == std::string::npos ? "" : s.substr(0, last + 1);
}
std::string strip_newlines(const std::string& s) { return rstrip_newlines(lstrip_newlines(s)); }
// s.split(sep)[0] and s.split(sep)[-1]
std::string before_first(const std::string& s, const std::string& sep) { return s.substr(0, s.find(sep)); }
std::string after_last(const std::string& s, const std::string& sep) {
  const size_t at = s.rfind(sep);
  return at == std::string::npos ? s : s.substr(at + sep.size());
}

// Jinja's trim: white space off both ends (Unicode White_Space, ASCII's included).
std::string trim(const std::string& s) {
  size_t begin = 0, end = s.size();
  auto space_at = [&](size_t i, size_t* length) {
    uint32_t cp = 0;
    const size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? (cp = static_cast<unsigned char>(s[i]), 1)
                                                              : json::decode_utf8_at(s, i, cp);
    *length = n;
    return n > 0 && class_of(cp) == CodePointClass::kSpace;
  };
  for (size_t n = 0; begin < end && space_at(begin, &n);) begin += n;
  while (end > begin) {  // the last character: step back to its first byte
    size_t start = end - 1, n = 0;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    if (!space_at(start, &n) || start + n != end) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// --- the templates -----------------------------------------------------------------------------------

std::string render_qwen3(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  std::string out;
  if (messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  // the last user query: the last user turn that is not a tool's response
  int64_t last_query = static_cast<int64_t>(messages.size()) - 1;
  for (int64_t i = last_query; i >= 0; --i) {
    const ChatMessage& m = messages[static_cast<size_t>(i)];
    if (m.role == "user" && !(starts_with(m.content, "<tool_response>") && ends_with(m.content, "</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string content = m.content, reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (m.content.find("</think>") != std::string::npos) {  // the reasoning written in the content
        content = lstrip_newlines(after_last(m.content, "</think>"));
        reasoning = lstrip_newlines(after_last(rstrip_newlines(before_first(m.content, "</think>")), "<think>"));
      }
      const bool last = i + 1 == messages.size();
      if (static_cast<int64_t>(i) > last_query && (last || !reasoning.empty()))
        out += "<|im_start|>assistant\n<think>\n" + strip_newlines(reasoning) + "\n</think>\n\n" + lstrip_newlines(content);
      else
        out += "<|im_start|>assistant\n" + content;
      out += "<|im_end|>\n";
    }
  }
  if (o.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!o.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

std::string render_qwen25(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  std::string out = messages[0].role == "system"
                        ? "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n"
                        : "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n";
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0) || m.role == "assistant")
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (o.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string llama_turn(const ChatMessage& m) {
  return "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
}

std::string render_llama3(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) out += (i == 0 ? o.bos_token : "") + llama_turn(messages[i]);
  return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";  // the template writes it always
}

// "28 Nov 2026": today, as transformers' strftime_now("%d %b %Y") (local time).
std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%d %b %Y", &local);
  return text;
}

std::string render_llama31(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  const bool system = messages[0].role == "system";
  std::string out = o.bos_token + "<|start_header_id|>system<|end_header_id|>\n\n" +
                    "Cutting Knowledge Date: December 2023\n" + "Today Date: " +
                    (o.date_string.empty() ? today() : o.date_string) + "\n\n" +
                    (system ? trim(messages[0].content) : std::string()) + "<|eot_id|>";
  for (size_t i = system ? 1 : 0; i < messages.size(); ++i) out += llama_turn(messages[i]);
  if (o.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string render_tapegrad(const std::vector<ChatMessage>& messages, const ChatOptions& o) {
  std::string out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") throw Error("chat template tapegrad: it has no system turn (its prompt is fixed)");
    out += m.role == "user" ? alpaca_prompt(m.content, "") : m.content + o.eos_token;
  }
  return out;  // a user turn ends in "### Response:\n": the generation prompt is there already
}

struct Named {
  const char* name;
  ChatFormat format;
};
constexpr Named kFormats[] = {{"qwen3", ChatFormat::kQwen3},
                              {"qwen2.5", ChatFormat::kQwen25},
                              {"llama3", ChatFormat::kLlama3},
                              {"llama3.1", ChatFormat::kLlama31},
                              {"tapegrad", ChatFormat::kTapegrad}};
constexpr const char* kChoices = "qwen3, qwen2.5, llama3, llama3.1 or tapegrad";

}  // namespace

ChatFormat chat_format_from_name(const std::string& name) {
  for (const Named& n : kFormats)
    if (name == n.name) return n.format;
  throw Error("chat format \"" + name + "\": tapegrad renders " + kChoices);
}

const char* chat_format_name(ChatFormat format) {
  for (const Named& n : kFormats)
    if (n.format == format) return n.name;
  return "?";
}

ChatFormat chat_format_of_template(const std::string& t, const std::string& source) {
  auto has = [&](const char* part) { return t.find(part) != std::string::npos; };
  if (has("<|im_start|>") && has("enable_thinking")) return ChatFormat::kQwen3;
  if (has("<|im_start|>") && has("You are Qwen, created by Alibaba Cloud")) return ChatFormat::kQwen25;
  if (has("<|start_header_id|>") && has("Cutting Knowledge Date")) return ChatFormat::kLlama31;
  if (has("<|start_header_id|>") && has("<|eot_id|>")) return ChatFormat::kLlama3;
  if (has("### Instruction:") && has("### Response:")) return ChatFormat::kTapegrad;
  throw Error(source + ": its chat_template is none that tapegrad renders (" + kChoices +
              "); give --chat-format to render it as one of them");
}

std::vector<ChatMessage> chat_messages_from_json(const json::Value& messages, const std::string& where) {
  if (!messages.is_array()) throw Error(where + ": \"messages\" must be a list of {\"role\", \"content\"}");
  if (messages.size() == 0) throw Error(where + ": \"messages\" is empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json::Value& m = messages[i];
    const std::string at = where + ": message " + std::to_string(i + 1);
    if (!m.is_object()) throw Error(at + " is not an object {\"role\", \"content\"}");
    const json::Value* role = m.find("role");
    const json::Value* content = m.find("content");
    if (!role || !role->is_string()) throw Error(at + ": \"role\" is missing or not a string");
    if (!content || !content->is_string()) throw Error(at + ": \"content\" is missing or not a string");
    const std::string& r = role->as_string();
    if (r != "system" && r != "user" && r != "assistant")
      throw Error(at + ": unknown role \"" + r + "\" (system, user or assistant)");
    if (m.contains("tool_calls")) throw Error(at + ": tool_calls are not rendered by tapegrad");
    ChatMessage message{r, content->as_string(), std::nullopt};
    if (const json::Value* reasoning = m.find("reasoning_content"); reasoning && !reasoning->is_null()) {
      if (!reasoning->is_string()) throw Error(at + ": \"reasoning_content\" must be a string");
      message.reasoning_content = reasoning->as_string();
    }
    out.push_back(std::move(message));
  }
  return out;
}

std::string render_chat(ChatFormat format, const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  if (messages.empty()) throw Error("render_chat: the conversation has no message");
  switch (format) {
    case ChatFormat::kQwen3: return render_qwen3(messages, options);
    case ChatFormat::kQwen25: return render_qwen25(messages, options);
    case ChatFormat::kLlama3: return render_llama3(messages, options);
    case ChatFormat::kLlama31: return render_llama31(messages, options);
    case ChatFormat::kTapegrad: break;
  }
  return render_tapegrad(messages, options);
}

ChatSetup chat_setup(const Tokenizer& tokenizer, const std::string& format_name, const std::string& where) {
  const HfTokenizer* hf = tokenizer.hf();
  ChatSetup setup;
  if (!format_name.empty()) setup.format = chat_format_from_name(format_name);
  else if (hf && !hf->chat_template().empty()) setup.format = chat_format_of_template(hf->chat_template(), hf->source());
  else if (hf) throw UsageError(where + " has no chat template (tokenizer_config.json's chat_template); give --chat-format");
  if (hf && hf->bos_id() >= 0) setup.options.bos_token = hf->token_bytes(hf->bos_id());
  if (tokenizer.end_of_text_id() >= 0) setup.options.eos_token = tokenizer.decode({tokenizer.end_of_text_id()});
  return setup;
}

int64_t chat_end_token(ChatFormat format, const Tokenizer& tokenizer) {
  const HfTokenizer* hf = tokenizer.hf();
  switch (format) {
    case ChatFormat::kQwen3:
    case ChatFormat::kQwen25: return hf ? hf->token_id("<|im_end|>") : -1;
    case ChatFormat::kLlama3:
    case ChatFormat::kLlama31: return hf ? hf->token_id("<|eot_id|>") : -1;
    case ChatFormat::kTapegrad: break;
  }
  return tokenizer.end_of_text_id();
}

}  // namespace tg::tokenizers
