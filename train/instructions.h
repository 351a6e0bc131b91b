// train/instructions.h — instruction data for fine-tuning (train_gpt --data-format jsonl),
// as chapter 7 of "LLMs from scratch" does it: Alpaca-style examples, one JSON object a line,
//
//   {"instruction": "Give the plural of mouse.", "input": "", "output": "mice"}
//
// Read first: parse_instructions (what a line may hold), encode_instructions (an example's ids
// and which are learnt), instruction_batch (the padded batch and its targets), then
// load_instruction_data (the split).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/json.h"
#include "train/data.h"
#include "train/evaluate.h"
#include "tokenizers/chat_template.h"  // alpaca_prompt
#include "tokenizers/tokenizer.h"
#include "models/causal_lm.h"

namespace tg::train {

struct Instruction {
  std::string instruction, input, output;
  int64_t line = 0;  // 1-based, in the file
};

// Each non-blank line of a JSONL text as a JSON object, with where ("source: line N") and its line
// number; a line that is not JSON, or not an object, is an Error naming it and the shape a line has.
void for_each_jsonl_object(const std::string& text, const std::string& source, const std::string& shape,
                           const std::function<void(const json::Value&, const std::string&, int64_t)>& on_object);

// The examples of a JSONL text. "instruction" and "output" are strings and must be there; "input"
// is a string or left out (left out = empty); other keys are ignored; blank lines are skipped;
// lines end in "\n", "\r\n" or "\r" (text_lines, io/user_file.h). source (the file's
// name) starts every message, with the line:
// "data.jsonl: line 3: not JSON: ...", "...: line 4: not a JSON object (got an array)",
// "...: line 5: \"output\" is missing", "...: line 6: \"input\" must be a string, got null".
// A text with no example (blank lines only) is an error too.
std::vector<Instruction> parse_instructions(const std::string& text, const std::string& source);

// The text a tokenizer made from the data learns from (char or bpe from scratch): each example's
// prompt and output, one after another.
std::string instructions_as_text(const std::vector<Instruction>& examples);


// An example as the model trains on it: its ids and which of them are learnt (the targets). The
// instruction examples here learn their response; a conversation (train/chat_data.h) its assistant
// turns.
struct InstructionExample {
  std::vector<int64_t> ids;        // the prompt's, then the response's (output, end-of-text)
  std::vector<uint8_t> is_target;  // (ids.size()): 1 where the id is learnt, 0 where it is read only
  int64_t prompt_tokens = 0;       // the ids before the last response: what a sample is prompted with
  int64_t line = 0;
};

struct EncodedInstructions {
  std::vector<InstructionExample> examples;  // the ones that fit, in file order
  std::vector<int64_t> skipped_lines;        // the lines of the ones longer than context + 1 tokens
};
// Each example becomes one token sequence, the prompt (alpaca_prompt, tokenizers/chat_template.h)
// and then the response:
//
//   ids = encode(alpaca_prompt(instruction, input)) + encode(output) + [<|endoftext|>]
//
// the end-of-text token only when the tokenizer has one (GPT-2's, a Hugging Face eos_token, or the
// one a char or bpe tokenizer made from the examples gets: tokenizers/tokenizer.h), so the model
// learns to stop. The two parts are encoded apart, so the boundary between them is exact whatever
// the tokenizer. An example fits a context of T tokens when it has at most T + 1 ids (the model
// reads all but the last); longer ones are skipped and counted.
// Errors name source and the line: a character the tokenizer lacks, or an empty output with a
// tokenizer that has no end-of-text (nothing would be learnt).
EncodedInstructions encode_instructions(const std::vector<Instruction>& examples, const tokenizers::Tokenizer& tokenizer,
                                        int64_t context, const std::string& source);

// A fine-tuning run's data: the split below, encoded.
struct InstructionData {
  std::vector<InstructionExample> train, val;
  std::vector<int64_t> skipped_lines;  // both splits' examples that did not fit, by line
  int64_t pad_id = 0;                  // x's padding: the end-of-text id, else 0 (never read: masked)
};
// The split is by position in the file, as the text's 90/10 split: of the file's n examples, the
// first int(0.9 n) train and the rest validate (shuffle the file first if its order means
// something); then each split drops its examples that do not fit.
// Errors: the parse's and the encoding's above, fewer than 2 examples, or a split left empty by the
// skipping (naming how many were skipped and --context).
InstructionData load_instruction_data(const std::string& jsonl, const std::string& source, const tokenizers::Tokenizer& tokenizer,
                                      int64_t context);

// The split of n examples of source (the first train_count(n) train), each part encoded by
// encode(first, last) (examples first .. last - 1), with the errors above: what
// load_instruction_data and load_chat_data (train/chat_data.h) share.
InstructionData split_examples(int64_t n, const std::function<EncodedInstructions(int64_t, int64_t)>& encode,
                               const tokenizers::Tokenizer& tokenizer, int64_t context, const std::string& source);

// "skipped 3 of 60 examples longer than the context (over 257 tokens for --context 256): lines
// 4, 17, 90", at most the first 5 lines listed; "" when none was skipped.
std::string skipped_examples_note(const std::vector<int64_t>& skipped_lines, int64_t examples, int64_t context);

// The batch of examples[which[0]], examples[which[1]], ...: x, y (B, L) int64 and
// key_padding_mask (B, L) bool, L the longest example's length - 1. It is right-padded to its
// longest example, not to the context:
//
//   x[t] = ids[t]                                   t < n - 1, else the padding id
//   y[t] = ids[t + 1] if is_target[t + 1]           the response's tokens and the end-of-text
//          else -100                                the prompt's, and the padding (ignore_index)
//   key_padding_mask[t] = t >= n - 1                true = padded: no position attends to it
//
// so cross_entropy(logits, y) (ignore_index -100) is the mean loss over the response's tokens and
// the prompt gets no gradient from it.
Batch instruction_batch(const std::vector<InstructionExample>& examples, const std::vector<int64_t>& which,
                        int64_t pad_id);

// The loss over the examples' response tokens, `batch` examples at a time in order, in eval mode
// without a tape: loss = their summed -log p / their count, perplexity, bits per byte, and tokens
// = how many response tokens (evaluate.h's TextEval).
TextEval evaluate_instructions(models::CausalLM& model, const tokenizers::Tokenizer& tokenizer,
                               const std::vector<InstructionExample>& examples, int64_t batch, int64_t pad_id);

}  // namespace tg::train
