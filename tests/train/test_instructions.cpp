// Instruction fine-tuning's data (train/instructions.h) and its training step: the Alpaca
// template, the JSONL reader (its line ends, its errors: file and line), padding to the longest
// example with a key padding mask, targets on the response only, the batch and its loss against PyTorch's
// (tests/reference/instruct, made by make_instruct_reference.py with examples/pytorch/tapegrad_twin/hf_gpt2.py),
// the split and the skipping, and the Trainer's steps: --grad-accum trains as one big batch, and
// a resumed run goes on bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "io/user_file.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "train/run_folder.h"
#include "train/corpus.h"
#include "models/hf/hf_gpt2.h"
#include "train/instructions.h"
#include "train/trainer.h"
#include "test_util.h"
#include "train/resumed_run.h"

namespace tg {
namespace {

using test::all_close;
using test::expect_error;
using test::same_bytes;

const std::string kReference = std::string(TG_REFERENCE_DIR) + "/instruct";

TEST(Instructions, TheTemplateIsChapter7s) {
  const std::string head =
      "Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n"
      "### Instruction:\nGive the plural of the word.";
  EXPECT_EQ(tokenizers::alpaca_prompt("Give the plural of the word.", "mouse"), head + "\n\n### Input:\nmouse\n\n### Response:\n");
  EXPECT_EQ(tokenizers::alpaca_prompt("Give the plural of the word.", ""), head + "\n\n### Response:\n");  // no input part
}

TEST(Instructions, ReadsTheFieldsSkipsBlankLinesAndKeepsLineNumbers) {
  const std::vector<train::Instruction> got = train::parse_instructions(
      "{\"instruction\": \"a\", \"input\": \"b\", \"output\": \"c\"}\n"
      "\n  \r\n"
      "{\"output\": \"z\", \"instruction\": \"x\", \"note\": 3}\r\n"  // no input: empty; other keys ignored
      "{\"instruction\": \"\\u00e9\\n\", \"input\": \"\", \"output\": \"ok\"}",  // no newline at the end
      "d.jsonl");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].instruction + got[0].input + got[0].output, "abc");
  EXPECT_EQ(got[0].line, 1);
  EXPECT_EQ(got[1].instruction + "|" + got[1].input + "|" + got[1].output, "x||z");
  EXPECT_EQ(got[1].line, 4);
  EXPECT_EQ(got[2].instruction, "\xc3\xa9\n");
  EXPECT_EQ(got[2].line, 5);
}

TEST(Instructions, LfCrAndCrlfLineEndsGiveTheSameExamples) {
  // "\r" alone once left the file one line: "not JSON" at line 1 (Python's text mode reads it as lines)
  const std::string lf = "{\"instruction\": \"a\", \"output\": \"b\"}\n\n{\"instruction\": \"c\", \"output\": \"d\"}\n";
  for (const std::string line_end : {"\r", "\r\n"}) {
    std::string text;
    for (char c : lf) text += c == '\n' ? line_end : std::string(1, c);
    const std::vector<train::Instruction> got = train::parse_instructions(text, "d.jsonl");
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].instruction + got[0].output + got[1].instruction + got[1].output, "abcd");
    EXPECT_EQ(got[1].line, 3);
  }
}

TEST(Instructions, TextLinesSplitsAsPythonsTextModeDoes) {
  using Lines = std::vector<std::string_view>;
  EXPECT_EQ(text_lines("a\nb"), (Lines{"a", "b"}));
  EXPECT_EQ(text_lines("a\r\nb\r\n"), (Lines{"a", "b"}));
  EXPECT_EQ(text_lines("a\rb\r"), (Lines{"a", "b"}));
  EXPECT_EQ(text_lines("a\r\r\nb\n\rc"), (Lines{"a", "", "b", "", "c"}));  // "\n\r": two line ends
  EXPECT_EQ(text_lines("\n"), (Lines{""}));
  EXPECT_EQ(text_lines(""), (Lines{}));
}

TEST(Instructions, BadLinesNameTheFileAndTheLine) {
  const std::string good = "{\"instruction\": \"a\", \"output\": \"b\"}\n";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {good + "{\"instruction\": \"a\", \"output\": \"b\"\n", {"d.jsonl: line 2: not JSON:", "(column"}},
      {good + good + "instruction: a\n", {"d.jsonl: line 3: not JSON"}},
      {good + "[\"a\", \"b\"]\n", {"d.jsonl: line 2: not a JSON object (got an array)"}},
      {good + "\"a\"\n", {"d.jsonl: line 2: not a JSON object (got a string)"}},
      {good + "{\"output\": \"b\"}\n", {"d.jsonl: line 2: \"instruction\" is missing"}},
      {good + "{\"instruction\": \"a\", \"input\": \"b\"}\n", {"d.jsonl: line 2: \"output\" is missing"}},
      {good + "{\"instruction\": \"a\", \"output\": 7}\n", {"d.jsonl: line 2: \"output\" must be a string, got a number"}},
      {good + "{\"instruction\": \"a\", \"input\": null, \"output\": \"b\"}\n",
       {"d.jsonl: line 2: \"input\" must be a string (or left out), got null"}},
      {good + "{\"instruction\": \"a\", \"output\": \"b\", \"output\": \"c\"}\n", {"d.jsonl: line 2: not JSON"}},
      {"\n \n", {"d.jsonl: no examples (every line is blank)"}},
  };
  for (const auto& [text, parts] : cases) {
    SCOPED_TRACE(text);
    expect_error([&] { train::parse_instructions(text, "d.jsonl"); }, parts);
  }
}

// Examples in characters, so that the ids are easy to follow.
tokenizers::Tokenizer chars_of(const std::vector<train::Instruction>& examples) {
  return tokenizers::CharTokenizer::from_text(train::instructions_as_text(examples));
}

TEST(Instructions, ABatchIsPaddedToItsLongestExampleWithTargetsOnTheResponseOnly) {
  const std::vector<train::Instruction> examples =
      train::parse_instructions("{\"instruction\": \"Say hi.\", \"output\": \"hi\"}\n"
                         "{\"instruction\": \"Say hello.\", \"input\": \"twice\", \"output\": \"hello hello\"}\n",
                         "d.jsonl");
  const tokenizers::Tokenizer chars = chars_of(examples);
  const train::EncodedInstructions encoded = encode_instructions(examples, chars, 1000, "d.jsonl");
  ASSERT_EQ(encoded.examples.size(), 2u);
  const train::InstructionExample& short_one = encoded.examples[0];
  const int64_t p = short_one.prompt_tokens, n = p + 2;  // "hi", no end-of-text among characters
  EXPECT_EQ(chars.decode({short_one.ids.begin(), short_one.ids.begin() + p}), tokenizers::alpaca_prompt("Say hi.", ""));
  EXPECT_EQ(chars.decode(short_one.ids), tokenizers::alpaca_prompt("Say hi.", "") + "hi");
  const int64_t long_n = static_cast<int64_t>(encoded.examples[1].ids.size());

  const train::Batch b = instruction_batch(encoded.examples, {0, 1}, 0);
  EXPECT_EQ(b.x.sizes(), Shape({2, long_n - 1}));  // the longest, not the context
  const std::vector<int64_t> x = b.x.tolist<int64_t>(), y = b.y.tolist<int64_t>();
  const std::vector<int64_t> pad = b.key_padding_mask.to(kInt64).tolist<int64_t>();
  for (int64_t t = 0; t < long_n - 1; ++t) {
    SCOPED_TRACE("position " + std::to_string(t));
    const size_t at = static_cast<size_t>(t);
    const bool real = t < n - 1;
    EXPECT_EQ(pad[at], real ? 0 : 1);
    EXPECT_EQ(x[at], real ? short_one.ids[at] : 0);
    // y: the next id where it is a response token (t + 1 >= p), else ignore_index
    EXPECT_EQ(y[at], real && t + 1 >= p ? short_one.ids[at + 1] : -100);
  }
  // the long one fills its row: no padding, targets from its prompt's last position on
  const int64_t long_p = encoded.examples[1].prompt_tokens;
  const size_t row = static_cast<size_t>(long_n - 1);
  EXPECT_EQ(std::accumulate(pad.begin() + static_cast<int64_t>(row), pad.end(), int64_t{0}), 0);
  EXPECT_EQ(std::count_if(y.begin() + static_cast<int64_t>(row), y.end(), [](int64_t v) { return v != -100; }),
            long_n - long_p);
  expect_error([&] {
    train::encode_instructions(train::parse_instructions("{\"instruction\": \"a\", \"output\": \"\"}", "e.jsonl"), chars, 99, "e.jsonl");
  }, {"e.jsonl: line 1: \"output\" is empty and the char tokenizer has no end-of-text token"});
  expect_error([&] {
    train::encode_instructions(train::parse_instructions("{\"instruction\": \"\\u00e9\", \"output\": \"b\"}", "e.jsonl"), chars, 99,
                        "e.jsonl");
  }, {"e.jsonl: line 1: "});
}

// n examples, example i about twice as long as example i - 1 every 4 steps (prompts of the
// template's ~150 characters, responses of 1 to 28).
std::string examples_jsonl(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    std::string word(static_cast<size_t>(1 + (i * 7) % 5), static_cast<char>('a' + i % 7));
    std::string output;
    for (int k = 0; k <= i % 4; ++k) output += word + " " + std::to_string(i);
    text += "{\"instruction\": " + json::quote("Say it " + std::to_string(i % 3 + 1) + " times.") +
            (i % 2 ? ", \"input\": " + json::quote(word) : std::string()) + ", \"output\": " + json::quote(output) +
            "}\n";
  }
  return text;
}

TEST(Instructions, TheSplitIsByPositionAndTheTooLongAreSkippedAndCounted) {
  const std::string text = examples_jsonl(20);
  const std::vector<train::Instruction> all = train::parse_instructions(text, "d.jsonl");
  const tokenizers::Tokenizer chars = chars_of(all);
  train::InstructionData data = train::load_instruction_data(text, "d.jsonl", chars, 1000);
  ASSERT_EQ(data.train.size(), 18u);  // int(0.9 * 20)
  ASSERT_EQ(data.val.size(), 2u);
  EXPECT_EQ(data.val[0].line, 19);
  EXPECT_TRUE(data.skipped_lines.empty());
  EXPECT_EQ(data.pad_id, 0);  // characters have no end-of-text

  // a context that only the shorter ones fit: the others are skipped, by line
  std::vector<int64_t> lengths;
  for (const train::InstructionExample& e : encode_instructions(all, chars, 1000, "d.jsonl").examples)
    lengths.push_back(static_cast<int64_t>(e.ids.size()));
  std::vector<int64_t> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  const int64_t context = sorted[10] - 1;  // fits examples of up to context + 1 ids
  data = train::load_instruction_data(text, "d.jsonl", chars, context);
  std::vector<int64_t> want;
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] > context + 1) want.push_back(static_cast<int64_t>(i) + 1);
  EXPECT_EQ(data.skipped_lines, want);
  EXPECT_EQ(data.train.size() + data.val.size() + want.size(), 20u);
  const std::string note = train::skipped_examples_note(data.skipped_lines, 20, context);
  EXPECT_TRUE(test::has_part(note, "skipped " + std::to_string(want.size()) + " of 20 examples longer than the context"));
  EXPECT_TRUE(test::has_part(note, "lines " + std::to_string(want[0]) + ", " + std::to_string(want[1])));
  EXPECT_TRUE(test::has_part(note, ", ...")) << "at most 5 lines are listed";
  EXPECT_EQ(train::skipped_examples_note({}, 20, context), "");

  expect_error([&] { train::load_instruction_data(text, "d.jsonl", chars, 20); },
               {"d.jsonl: none of the 18 training examples fits the context", "--context 20"});
  expect_error([&] { train::load_instruction_data(examples_jsonl(1), "d.jsonl", chars, 1000); },
               {"d.jsonl: only 1 example: at least 2 are needed"});
}

// The tiny GPT-2 of tests/reference/instruct and its examples, batched as PyTorch batched them.
struct ReferenceBatch {
  models::HfGpt2 gpt2 = models::load_hf_gpt2(kReference);
  tokenizers::Tokenizer tokenizer = tokenizers::load_tokenizer(kReference);
  train::EncodedInstructions encoded =
      train::encode_instructions(train::parse_instructions(test::read_bytes(kReference + "/examples.jsonl"), "examples.jsonl"),
                          tokenizer, 255, "examples.jsonl");
  train::Batch batch = instruction_batch(encoded.examples, {0, 1, 2, 3, 4}, tokenizer.end_of_text_id());
  NamedTensors torch = load_safetensors(kReference + "/batch.safetensors");
  Tensor reference(const std::string& name) const {
    for (const auto& [key, t] : torch)
      if (key == name) return t;
    throw Error("batch.safetensors has no " + name);
  }
};

TEST(Instructions, TheBatchItsLogitsLossAndGradientsArePyTorchs) {
  ReferenceBatch r;
  ASSERT_EQ(r.encoded.examples.size(), 5u);
  EXPECT_TRUE(r.encoded.skipped_lines.empty());
  // the same ids, padding and targets: the template, the tokenizer and the masking agree
  EXPECT_TRUE(same_bytes(r.batch.x, r.reference("x")));
  EXPECT_TRUE(same_bytes(r.batch.y, r.reference("y")));
  EXPECT_TRUE(same_bytes(r.batch.key_padding_mask.to(kInt64), (r.reference("attention_mask") == 0).to(kInt64)));

  models::GPTModel& model = *r.gpt2.model;  // eval mode: no dropout
  const Tensor logits = model.forward(r.batch.x, r.batch.key_padding_mask);  // (B, L, V)
  // every position's, the padded ones too (they attend to the real tokens only, as in PyTorch)
  EXPECT_TRUE(all_close(logits.narrow(2, 0, 8), r.reference("logits8"), 2e-5, 1e-5));
  const Tensor loss = cross_entropy(logits.flatten(0, 1), r.batch.y.flatten());
  const double want = r.reference("loss").item<double>();
  EXPECT_NEAR(loss.item<double>(), want, 1e-6 * want);
  std::cout << "  loss over the response tokens: " << loss.item<double>() << ", PyTorch's " << want << "\n";
  loss.backward();
  EXPECT_TRUE(all_close(model.tok_emb->weight.grad(), r.reference("wte_grad"), 1e-6, 1e-4));
}

TEST(Instructions, ThePromptAndThePaddingGetExactlyZeroGradient) {
  ReferenceBatch r;
  Tensor logits = r.gpt2.model->forward(r.batch.x, r.batch.key_padding_mask).detach();  // (B, L, V)
  logits.requires_grad_(true);
  cross_entropy(logits.flatten(0, 1), r.batch.y.flatten()).backward();
  const int64_t V = logits.size(2);
  const std::vector<float> grad = logits.grad().tolist<float>();
  const std::vector<int64_t> y = r.batch.y.tolist<int64_t>();
  int64_t zero_rows = 0, response_rows = 0;
  for (size_t row = 0; row < y.size(); ++row) {
    const auto first = grad.begin() + static_cast<int64_t>(row) * V, last = first + V;
    const bool all_zero = std::all_of(first, last, [](float g) { return g == 0.0f && !std::signbit(g); });
    if (y[row] == -100) {
      EXPECT_TRUE(all_zero) << "row " << row << " (prompt or padding)";
      zero_rows += 1;
    } else {
      EXPECT_FALSE(all_zero) << "row " << row << " (a response token)";
      response_rows += 1;
    }
  }
  EXPECT_EQ(response_rows, 50);  // make_instruct_reference.py's count
  EXPECT_GT(zero_rows, 500);
}

TEST(Instructions, PaddingDoesNotChangeTheRealTokensOutputs) {
  ReferenceBatch r;
  NoGradGuard no_grad;
  models::GPTModel& model = *r.gpt2.model;
  const Tensor batched = model.forward(r.batch.x, r.batch.key_padding_mask);  // (B, L, V)
  double worst = 0;
  for (size_t b = 0; b < r.encoded.examples.size(); ++b) {
    const std::vector<int64_t>& ids = r.encoded.examples[b].ids;
    const int64_t n = static_cast<int64_t>(ids.size()) - 1;
    const Tensor alone = model.forward(from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, n}));
    const Tensor in_batch = batched.narrow(0, static_cast<int64_t>(b), 1).narrow(1, 0, n);
    EXPECT_TRUE(all_close(in_batch, alone, 1e-5, 1e-5)) << "example " << b;
    worst = std::max(worst, (in_batch - alone).abs().max().item<double>());
  }
  std::cout << "  largest difference of a real position's logit, padded batch vs the example alone: " << worst << "\n";
}

// --- the Trainer on instruction data ---------------------------------------------------------------

train::TrainOptions instruction_options(int64_t batch, int64_t grad_accum, double dropout) {
  train::TrainOptions o;
  o.data = "examples.jsonl";  // the text is given; the name is for messages
  o.data_format = "jsonl";
  o.batch = batch;
  o.grad_accum = grad_accum;
  o.model.context_length = 200;
  o.model.emb_dim = 16;
  o.model.n_heads = 2;
  o.model.n_layers = 2;
  o.model.drop_rate = dropout;
  o.steps = 8;
  o.warmup = 1;
  o.lr = 3e-3;
  o.eval_batches = 1;
  return o;
}

TEST(InstructionTraining, GradAccumTrainsAsOneBigBatch) {
  const std::string text = examples_jsonl(30);
  train::Trainer big(instruction_options(4, 1, 0.0), text);
  for (const auto& [batch, accum] : {std::pair<int64_t, int64_t>{2, 2}, {1, 4}}) {
    train::Trainer reference(instruction_options(4, 1, 0.0), text), micro(instruction_options(batch, accum, 0.0), text);
    for (int step = 1; step <= 5; ++step) {
      const train::Trainer::StepResult want = reference.train_step(), got = micro.train_step();
      EXPECT_NEAR(got.loss, want.loss, 1e-6 * want.loss) << "--batch " << batch << " --grad-accum " << accum << ", step " << step;
      EXPECT_LE(got.tokens, want.tokens) << "micro-batches pad to their own longest example";
    }
    const auto want = reference.model().named_parameters(), got = micro.model().named_parameters();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(all_close(got[i].second, want[i].second, 1e-6, 1e-4)) << want[i].first;
  }
  const train::Trainer::Losses l = big.evaluate();
  EXPECT_TRUE(std::isfinite(l.train) && std::isfinite(l.val) && l.val_bpb > 0) << l.train << " " << l.val;
}

TEST(InstructionTraining, TwoAndTwoStepsEqualFourStraightBitForBit) {
  const std::string text = examples_jsonl(30);
  const train::TrainOptions o = instruction_options(3, 2, 0.1);  // dropout: the default generator matters too
  test::TempFolder dir;
  const std::unique_ptr<train::Trainer> second = test::expect_resumed_run_equals_straight(
      [&] { return std::make_unique<train::Trainer>(o, text); }, text, 2, dir.path);
  EXPECT_EQ(train::saved_options(dir.path).data_format, "jsonl");
  ASSERT_NE(second->instructions(), nullptr);
}

TEST(InstructionTraining, TheTokenizerLearnsTheFormattedExamplesNotTheirJson) {
  const std::string text = "{\"instruction\": \"Tab\\there\", \"output\": \"\\u00e9\"}\n"
                           "{\"instruction\": \"b\", \"output\": \"c\"}\n";
  train::Trainer t(instruction_options(1, 1, 0.0), text);
  // the examples' characters, and the end-of-text token that ends each response
  EXPECT_EQ(t.tokenizer().to_json(),
            tokenizers::Tokenizer(chars_of(train::parse_instructions(text, "x"))).with_end_of_text().to_json());
  EXPECT_EQ(t.instructions()->train[0].ids.back(), t.tokenizer().end_of_text_id());
  EXPECT_EQ(t.tokenizer().encode("\t\xc3\xa9").size(), 2u);  // the tab and the é, not '\\' and 't'
  train::TrainOptions no_data = instruction_options(1, 1, 0.0);
  no_data.data = "";
  expect_error([&] { train::Trainer(no_data, text); }, {"--data-format jsonl needs --data FILE"});
}

// A run from scratch on instruction data made before a learned tokenizer had an end-of-text token
// (its tokenizer.json the same characters, without "eos_token") is named for what it is: not
// blamed on --data, which is the same.
TEST(InstructionTraining, ARunMadeBeforeTheEndOfTextTokenIsNamedOnResume) {
  const std::string text = examples_jsonl(30);
  train::Trainer t(instruction_options(2, 1, 0.0), text);
  test::TempFolder dir;
  train::save_run(t, dir.path);
  test::write_bytes(dir.file("tokenizer.json"),
                    tokenizers::Tokenizer(chars_of(train::parse_instructions(text, "x"))).to_json());
  expect_error([&] { train::resume_trainer(dir.path, train::saved_options(dir.path), text); },
               {dir.file("tokenizer.json") + ": the run was made before tapegrad gave a tokenizer learned from "
                "instruction or chat data an end-of-text token", "it cannot be resumed; train it again"});
}

}  // namespace
}  // namespace tg
