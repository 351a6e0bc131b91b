// train/answer_scores.cpp — answers, SQuAD's exact match and F1, the judge's prompt (see the header).
#include "train/answer_scores.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "autograd/error.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "models/generation/generate.h"
#include "tokenizers/chat_template.h"
#include "train/chat_data.h"
#include "train/instructions.h"

namespace tg::train {

namespace {

constexpr int64_t kNoSkipping = int64_t{1} << 40;  // a context no example passes: all are read

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }  // Python's \w

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace

std::string normalize_answer(const std::string& text) {
  std::string lowered;
  for (unsigned char c : text) {
    if (c < 0x80 && std::ispunct(c)) continue;  // string.punctuation
    lowered += static_cast<char>(c < 0x80 ? std::tolower(c) : c);
  }
  // re.sub(r"\b(a|an|the)\b", " ", text): the article as a whole word becomes a space
  std::string no_articles;
  for (size_t i = 0; i < lowered.size();) {
    bool article = false;
    for (const std::string word : {"the", "an", "a"}) {
      const size_t end = i + word.size();
      if (lowered.compare(i, word.size(), word) == 0 && (i == 0 || !is_word_byte(lowered[i - 1])) &&
          (end == lowered.size() || !is_word_byte(lowered[end]))) {
        no_articles += ' ';
        i = end;
        article = true;
        break;
      }
    }
    if (!article) no_articles += lowered[i++];
  }
  std::string joined;
  for (const std::string& word : words(no_articles)) joined += (joined.empty() ? "" : " ") + word;
  return joined;
}

double exact_match(const std::string& answer, const std::string& reference) {
  return normalize_answer(answer) == normalize_answer(reference) ? 1.0 : 0.0;
}

double token_f1(const std::string& answer, const std::string& reference) {
  const std::vector<std::string> a = words(normalize_answer(answer)), r = words(normalize_answer(reference));
  if (a.empty() || r.empty()) return a.empty() && r.empty() ? 1.0 : 0.0;
  std::map<std::string, int64_t> counts;
  for (const std::string& w : r) ++counts[w];
  int64_t common = 0;
  for (const std::string& w : a)
    if (counts[w] > 0) {
      --counts[w];
      ++common;
    }
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(a.size());
  const double recall = static_cast<double>(common) / static_cast<double>(r.size());
  return 2 * precision * recall / (precision + recall);
}

AnswerExamples read_answer_examples(const std::string& format, const std::string& text, const std::string& source,
                                    const tokenizers::Tokenizer& tokenizer) {
  AnswerExamples out;
  int64_t count = 0;
  const EncodedInstructions encoded = encode_example_file(format, text, source, tokenizer, kNoSkipping, &count);
  if (std::ssize(encoded.examples) != count)
    throw Error(source + ": " + std::to_string(count - std::ssize(encoded.examples)) + " examples could not be read");
  std::vector<std::pair<std::string, std::string>> references;  // (judge input, reference), in file order
  if (format == "chat") {
    for (const Conversation& c : parse_chats(text, source)) {
      size_t last = c.messages.size();
      while (last > 0 && c.messages[last - 1].role != "assistant") --last;
      std::string input;
      for (size_t k = 0; k + 1 < last; ++k)
        input += (input.empty() ? "" : "\n") + c.messages[k].role + ": " + c.messages[k].content;
      references.emplace_back(input, c.messages[last - 1].content);
    }
    out.end_token = tokenizers::chat_end_token(chat_training_setup(tokenizer, source).format, tokenizer);
  } else {
    const std::string response_header = "\n\n### Response:\n";
    for (const Instruction& e : parse_instructions(text, source)) {
      const std::string prompt = tokenizers::alpaca_prompt(e.instruction, e.input);
      references.emplace_back(prompt.substr(0, prompt.size() - response_header.size()), e.output);
    }
    out.end_token = tokenizer.end_of_text_id();
  }
  for (size_t i = 0; i < encoded.examples.size(); ++i) {
    const InstructionExample& e = encoded.examples[i];
    out.examples.push_back({{e.ids.begin(), e.ids.begin() + e.prompt_tokens}, references[i].second,
                            references[i].first, e.line});
  }
  return out;
}

std::string greedy_answer(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer,
                          const std::vector<int64_t>& prompt, int64_t max_tokens, int64_t end_token) {
  models::SamplingOptions greedy{.temperature = 0, .stop_token = end_token};
  greedy.suppress_tokens = models::ids_the_tokenizer_cannot_write(tokenizer, model.vocab_size());
  const Tensor ids = models::generate(model, from_vector(prompt, {1, std::ssize(prompt)}), max_tokens, greedy);
  const Tensor row = ids[0].contiguous();
  const int64_t* data = row.data_ptr<int64_t>();
  std::vector<int64_t> answer;
  for (int64_t t = std::ssize(prompt); t < row.size(0) && data[t] != end_token; ++t) answer.push_back(data[t]);
  return replacing_invalid_utf8(tokenizer.decode(answer));
}

std::string replacing_invalid_utf8(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    uint32_t code_point = 0;
    const size_t length = json::decode_utf8_at(text, pos, code_point);
    if (length == 0) {
      json::append_utf8(out, 0xFFFD);
      ++pos;
    } else {
      out.append(text, pos, length);
      pos += length;
    }
  }
  return out;
}

std::string judge_prompt(const std::string& input, const std::string& reference, const std::string& answer) {
  return "Given the input `" + input + "` and correct output `" + reference + "`, score the model response `" +
         answer + "` on a scale from 0 to 100, where 100 is the best score. Respond with the integer number only.";
}

std::optional<int64_t> judge_score(const std::string& reply) {
  const size_t start = reply.find_first_of("0123456789");
  if (start == std::string::npos) return std::nullopt;
  const size_t end = std::min(reply.find_first_not_of("0123456789", start), reply.size());
  if (end - start > 3) return std::nullopt;
  const int64_t score = std::stoll(reply.substr(start, end - start));
  if (score > 100) return std::nullopt;
  return score;
}

}  // namespace tg::train
