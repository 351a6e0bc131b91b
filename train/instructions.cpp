// train/instructions.cpp — reading, encoding, splitting and batching instruction examples.
#include "train/instructions.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "autograd/error.h"
#include "io/json.h"
#include "io/user_file.h"
#include "autograd/ops.h"
#include "autograd/tape.h"

namespace tg::train {

namespace {

constexpr int64_t kIgnoreIndex = -100;  // cross_entropy's default ignore_index

bool is_blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// The string member `key` of a line's object; optional: absent is "".
std::string string_field(const json::Value& object, const char* key, bool optional, const std::string& where) {
  const json::Value* v = object.find(key);
  if (!v) {
    if (optional) return "";
    throw Error(where + ": \"" + key + "\" is missing");
  }
  if (!v->is_string())
    throw Error(where + ": \"" + key + "\" must be a string" + (optional ? " (or left out)" : "") + ", got " +
                json::Value::kind_name(v->kind()));
  return v->as_string();
}

}  // namespace

void for_each_jsonl_object(const std::string& text, const std::string& source, const std::string& shape,
                           const std::function<void(const json::Value&, const std::string&, int64_t)>& on_object) {
  int64_t line_number = 0;
  for (const std::string_view text_line : text_lines(text)) {  // "\n", "\r\n" or "\r" line ends
    const std::string line(text_line);
    ++line_number;
    if (is_blank(line)) continue;
    const std::string where = source + ": line " + std::to_string(line_number);
    json::Value object;
    try {
      object = json::parse(line, where);
    } catch (const json::ParseError& e) {
      throw Error(where + ": not JSON: " + e.reason + " (column " + std::to_string(e.offset + 1) + ")");
    }
    if (!object.is_object())
      throw Error(where + ": not a JSON object (got " + std::string(json::Value::kind_name(object.kind())) +
                  "); each line is " + shape);
    on_object(object, where, line_number);
  }
}

std::vector<Instruction> parse_instructions(const std::string& text, const std::string& source) {
  std::vector<Instruction> out;
  for_each_jsonl_object(text, source, "{\"instruction\": ..., \"input\": ..., \"output\": ...}",
                        [&](const json::Value& object, const std::string& where, int64_t line) {
    if (object.contains("messages") && !object.contains("instruction"))
      throw Error(where + ": a conversation (\"messages\"), not an instruction example: give --data-format chat");
    Instruction example;
    example.instruction = string_field(object, "instruction", false, where);
    example.input = string_field(object, "input", true, where);
    example.output = string_field(object, "output", false, where);
    example.line = line;
    out.push_back(std::move(example));
  });
  if (out.empty()) throw Error(source + ": no examples (every line is blank)");
  return out;
}

std::string instructions_as_text(const std::vector<Instruction>& examples) {
  std::string text;
  for (const Instruction& e : examples) text += tokenizers::alpaca_prompt(e.instruction, e.input) + e.output + "\n";
  return text;
}

EncodedInstructions encode_instructions(const std::vector<Instruction>& examples, const tokenizers::Tokenizer& tokenizer,
                                        int64_t context, const std::string& source) {
  const int64_t end_of_text = tokenizer.end_of_text_id();
  EncodedInstructions out;
  for (const Instruction& e : examples) {
    const std::string where = source + ": line " + std::to_string(e.line);
    if (e.output.empty() && end_of_text < 0)
      throw Error(where + ": \"output\" is empty and the " + tokenizer.type() +
                  " tokenizer has no end-of-text token: the example has nothing to learn");
    InstructionExample x;
    x.line = e.line;
    try {
      x.ids = tokenizer.encode(tokenizers::alpaca_prompt(e.instruction, e.input));
      x.prompt_tokens = static_cast<int64_t>(x.ids.size());
      const std::vector<int64_t> response = tokenizer.encode(e.output);
      x.ids.insert(x.ids.end(), response.begin(), response.end());
    } catch (const Error& err) {  // a character the vocabulary lacks
      throw Error(where + ": " + err.what());
    }
    if (end_of_text >= 0) x.ids.push_back(end_of_text);
    x.is_target.assign(x.ids.size(), 1);  // the response and the end-of-text
    std::fill(x.is_target.begin(), x.is_target.begin() + x.prompt_tokens, 0);
    if (static_cast<int64_t>(x.ids.size()) > context + 1) {
      out.skipped_lines.push_back(e.line);
      continue;
    }
    out.examples.push_back(std::move(x));
  }
  return out;
}

InstructionData split_examples(int64_t n, const std::function<EncodedInstructions(int64_t, int64_t)>& encode,
                               const tokenizers::Tokenizer& tokenizer, int64_t context, const std::string& source) {
  if (n < 2) throw Error(source + ": only 1 example: at least 2 are needed (the first 90% train, the rest validate)");
  const int64_t n_train = train_count(n);  // 1 .. n - 1
  InstructionData data;
  data.pad_id = std::max<int64_t>(0, tokenizer.end_of_text_id());
  EncodedInstructions train = encode(0, n_train), val = encode(n_train, n);
  data.skipped_lines = train.skipped_lines;
  data.skipped_lines.insert(data.skipped_lines.end(), val.skipped_lines.begin(), val.skipped_lines.end());
  for (const auto& [split, count, name] : {std::tuple{&train, n_train, "training"}, {&val, n - n_train, "validation"}}) {
    if (split->examples.empty())
      throw Error(source + ": none of the " + std::to_string(count) + " " + name + " examples fits the context (each has over " +
                  std::to_string(context + 1) + " tokens with --context " + std::to_string(context) +
                  "): give a larger --context or shorter examples");
  }
  data.train = std::move(train.examples);
  data.val = std::move(val.examples);
  return data;
}

InstructionData load_instruction_data(const std::string& jsonl, const std::string& source, const tokenizers::Tokenizer& tokenizer,
                                      int64_t context) {
  const std::vector<Instruction> all = parse_instructions(jsonl, source);
  auto encode = [&](int64_t first, int64_t last) {
    return encode_instructions({all.begin() + first, all.begin() + last}, tokenizer, context, source);
  };
  return split_examples(std::ssize(all), encode, tokenizer, context, source);
}

std::string skipped_examples_note(const std::vector<int64_t>& skipped_lines, int64_t examples, int64_t context) {
  if (skipped_lines.empty()) return "";
  std::string lines;
  for (size_t i = 0; i < std::min<size_t>(5, skipped_lines.size()); ++i)
    lines += (i ? ", " : "") + std::to_string(skipped_lines[i]);
  if (skipped_lines.size() > 5) lines += ", ...";
  return "skipped " + std::to_string(skipped_lines.size()) + " of " + std::to_string(examples) +
         " examples longer than the context (over " + std::to_string(context + 1) + " tokens for --context " +
         std::to_string(context) + "): line" + (skipped_lines.size() > 1 ? "s " : " ") + lines;
}

Batch instruction_batch(const std::vector<InstructionExample>& examples, const std::vector<int64_t>& which,
                        int64_t pad_id) {
  const int64_t B = static_cast<int64_t>(which.size());
  int64_t L = 1;  // the longest example's inputs: all its ids but the last
  for (int64_t i : which) L = std::max<int64_t>(L, static_cast<int64_t>(examples.at(static_cast<size_t>(i)).ids.size()) - 1);
  std::vector<int64_t> x(static_cast<size_t>(B * L), pad_id), y(static_cast<size_t>(B * L), kIgnoreIndex),
      padded(static_cast<size_t>(B * L), 1);
  for (int64_t b = 0; b < B; ++b) {
    const InstructionExample& e = examples[static_cast<size_t>(which[static_cast<size_t>(b)])];
    const int64_t n = static_cast<int64_t>(e.ids.size());
    for (int64_t t = 0; t + 1 < n; ++t) {
      const size_t at = static_cast<size_t>(b * L + t);
      x[at] = e.ids[static_cast<size_t>(t)];
      padded[at] = 0;
      if (e.is_target[static_cast<size_t>(t + 1)]) y[at] = e.ids[static_cast<size_t>(t + 1)];  // a response token is the target
    }
  }
  return {from_vector(x, {B, L}), from_vector(y, {B, L}), from_vector(padded, {B, L}, kBool)};
}

TextEval evaluate_instructions(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer,
                               const std::vector<InstructionExample>& examples, int64_t batch, int64_t pad_id) {
  if (examples.empty()) throw Error("no instruction examples to evaluate");
  const std::vector<int64_t> bytes_of = tokenizer.bytes_per_id();
  NoGradGuard no_grad;
  model.eval();
  TextEval r;
  double nats = 0;
  for (size_t first = 0; first < examples.size(); first += static_cast<size_t>(batch)) {
    std::vector<int64_t> which;
    for (size_t i = first; i < std::min(examples.size(), first + static_cast<size_t>(batch)); ++i)
      which.push_back(static_cast<int64_t>(i));
    const Batch b = instruction_batch(examples, which, pad_id);
    const Tensor logits = model.forward(b.x, b.key_padding_mask);  // (B, L, V)
    nats += cross_entropy(logits.flatten(0, 1), b.y.flatten(), "sum").item<double>();
    for (int64_t id : b.y.tolist<int64_t>()) {
      if (id == kIgnoreIndex) continue;
      r.tokens += 1;
      r.bytes += bytes_of[static_cast<size_t>(id)];
    }
  }
  r.loss = nats / static_cast<double>(r.tokens);
  r.perplexity = std::exp(r.loss);
  r.bpb = nats / std::log(2.0) / static_cast<double>(std::max<int64_t>(1, r.bytes));
  return r;
}

}  // namespace tg::train
