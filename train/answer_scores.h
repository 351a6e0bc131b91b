// train/answer_scores.h — a model's own answers to instruction examples or conversations, scored
// against the references (evaluate --task instructions).
//
// Read first: read_answer_examples (the prompts and references), greedy_answer, then the scores
// (normalize_answer, exact_match, token_f1, as SQuAD's script) and the judge (judge_prompt).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/causal_lm.h"
#include "tokenizers/tokenizer.h"

namespace tg::train {

// The scores, as SQuAD's evaluation script computes them:
//   normalize(s)  lower-case; drop punctuation (Python's string.punctuation: ASCII's 32 signs);
//                 drop the words "a", "an", "the"; the words joined by one space (in that order)
//   exact_match   normalize(answer) == normalize(reference): 1 or 0
//   f1            the normalized words of both; common = their multiset intersection;
//                 precision = common / answer's words, recall = common / reference's words,
//                 f1 = 2 precision recall / (precision + recall), 0 when nothing is common;
//                 when either has no words, 1 if both have none, else 0 (SQuAD 2.0's rule)
// Lower-casing and word boundaries are ASCII's: a byte of a multi-byte UTF-8 character is a
// letter (Python lower-cases "É" too; its \b treats it as a letter as here).
std::string normalize_answer(const std::string& text);
double exact_match(const std::string& answer, const std::string& reference);
double token_f1(const std::string& answer, const std::string& reference);

struct AnswerExample {
  std::vector<int64_t> prompt;  // ids
  std::string reference;
  std::string judge_input;  // what the judge is told the input was
  int64_t line = 0;
};
struct AnswerExamples {
  std::vector<AnswerExample> examples;
  int64_t end_token = -1;  // where an answer stops (-1: none, max_tokens only)
};
// The examples of a file of format "jsonl" or "chat", in order: the file train_gpt --data-format
// jsonl or chat trains on, encoded as it encodes them (train/instructions.h, train/chat_data.h):
//   jsonl  prompt = alpaca_prompt(instruction, input); reference = output
//   chat   prompt = the turns before the last assistant turn, with the generation prompt;
//          reference = the last assistant turn's content
// Errors are the trainer's (the file, the line, the field).
AnswerExamples read_answer_examples(const std::string& format, const std::string& text, const std::string& source,
                                    const tokenizers::Tokenizer& tokenizer);

// The model's greedy answer to prompt (above), from the prompt's ids up to the end token (jsonl:
// the end-of-text; chat: the template's end of turn) or max_tokens, whichever comes first; the
// text after the prompt, without the end token.
std::string greedy_answer(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer,
                          const std::vector<int64_t>& prompt, int64_t max_tokens, int64_t end_token);

// Bytes that are not UTF-8 (an answer cut inside a character) as U+FFFD, as Hugging Face's decode
// writes them, so that an answer is a JSON string.
std::string replacing_invalid_utf8(const std::string& text);

// The judge (--judge DIR): a second model asked, as a user turn of its own chat template (Qwen3
// without thinking), the prompt of "LLMs from scratch" chapter 7:
//   "Given the input `{input}` and correct output `{reference}`, score the model response
//    `{answer}` on a scale from 0 to 100, where 100 is the best score. Respond with the integer
//    number only."
// input is the instruction part of the prompt (alpaca_prompt without "\n\n### Response:\n"), or
// the conversation's turns before the answer, "role: content" a line. Its greedy reply's first
// whole number is the score; a reply with none, or one over 100, is counted as unparsed and left
// out of the mean. judge_prompt writes that prompt; judge_score finds the score in a judge's reply
// (nullopt: none in [0, 100]).
std::string judge_prompt(const std::string& input, const std::string& reference, const std::string& answer);
std::optional<int64_t> judge_score(const std::string& reply);

}  // namespace tg::train
