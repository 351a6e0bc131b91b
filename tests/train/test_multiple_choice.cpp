// Multiple choice as lm-evaluation-harness scores it (train/task_formats.h, train/multiple_choice.h):
// each format's prompts and choices item by item against strings written out by hand from the
// harness's task definitions (HellaSwag's brackets and capitalize, ARC's keys "1"-"4", MMLU's CSV
// quoting), the requests of _encode_pair (a context ending in a space), bad input (one error
// naming file, line and field), the metrics, and the KV-cache scoring against each pair run whole.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/random/generator.h"
#include "models/gpt.h"
#include "models/hf/hf_llama.h"
#include "test_util.h"
#include "train/multiple_choice.h"
#include "train/task_formats.h"

namespace tg {
namespace {

using test::expect_error;
using train::TaskFormat;

const std::string kData = std::string(TG_REFERENCE_DIR) + "/../../examples/data";

TEST(MultipleChoiceFormats, HellaSwagPreprocessAsTheHarness) {
  EXPECT_EQ(train::hellaswag_preprocess("  a [title] b  "), "a. b");  // strip, " [title]" -> ". ", "  " -> " "
  EXPECT_EQ(train::hellaswag_preprocess("x [header] y [step] z"), "x y z");
  EXPECT_EQ(train::hellaswag_preprocess("a [b] c] d"), "a c] d");           // the shortest [...]
  EXPECT_EQ(train::hellaswag_preprocess("a [no\nclose] b"), "a [no\nclose] b");  // "." stops at a newline
  EXPECT_EQ(train::hellaswag_preprocess("a   b"), "a  b");                   // one pass of str.replace
  EXPECT_EQ(train::hellaswag_preprocess("a [unclosed"), "a [unclosed");
}

TEST(MultipleChoiceFormats, CapitalizeLowersTheRestAsPython) {
  EXPECT_EQ(train::python_capitalize("he DOES it"), "He does it");
  EXPECT_EQ(train::python_capitalize("ÉCOLE Ünd"), "École ünd");
  EXPECT_EQ(train::python_capitalize(""), "");
  EXPECT_EQ(train::python_capitalize("1st Place"), "1st place");
}

TEST(MultipleChoiceFormats, HellaSwagItemsAreTheHarnessQueries) {
  const auto items = train::read_task(TaskFormat::hellaswag, kData + "/hellaswag_sample.jsonl");
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0].query, "Making tea: A man fills a kettle at the sink and sets it on the stove. He");
  EXPECT_EQ(items[0].choices[1], "waits for the water to boil and puts a tea bag in a cup.");
  EXPECT_EQ(items[0].label, 1);
  // brackets: " [title]" becomes ". ", [header] and [step] go, the double spaces close up; ctx_b's
  // "DRY" is lowered by capitalize
  EXPECT_EQ(items[1].query,
            "Home and Garden: How to water a small garden. Check the soil first. Push a finger into the soil near "
            "the plants. If the soil feels dry an inch down,");
  EXPECT_EQ(items[1].choices[0], "it is time to water the plants. Water early in the morning so less is lost to the sun.");
  EXPECT_EQ(items[1].line, 2);
  EXPECT_EQ(items[3].query, "Food and Entertaining: How to make toast. Put bread in the toaster. Press the lever down. Wait a minute or two");
  EXPECT_EQ(items[3].label, 3);
  EXPECT_EQ(train::item_context(items, 0, 0, 1), items[0].query);
}

TEST(MultipleChoiceFormats, HellaSwagTakesALabelWrittenAsAString) {
  const auto items = train::parse_task(
      TaskFormat::hellaswag,
      R"({"activity_label": "A", "ctx_a": "b.", "ctx_b": "", "endings": ["x", "y"], "label": "1"})", "h.jsonl");
  EXPECT_EQ(items[0].query, "A: b.");  // ctx_a + " " + "" stripped
  EXPECT_EQ(items[0].label, 1);
}

TEST(MultipleChoiceFormats, ArcItemsWithLetterAndNumberKeys) {
  const auto items = train::read_task(TaskFormat::arc, kData + "/arc_sample.jsonl");
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0].query, "Question: Which of these is needed for a plant to make its own food?\nAnswer:");
  EXPECT_EQ(items[0].choices, (std::vector<std::string>{"sunlight", "sand", "darkness", "salt"}));
  EXPECT_EQ(items[0].label, 0);
  EXPECT_EQ(items[1].query, "Question: What happens to water when it is cooled below 0 degrees Celsius?\nAnswer:");
  EXPECT_EQ(items[1].label, 1);  // answerKey "2" among labels "1".."4"
  EXPECT_EQ(items[2].choices.size(), 3u);
  EXPECT_EQ(items[3].label, 2);  // "C" of five
}

TEST(MultipleChoiceFormats, MmluRowsWithQuotesCommasAndNewlines) {
  const std::string path = kData + "/high_school_physics_test.csv";
  EXPECT_EQ(train::mmlu_subject(path), "high school physics");
  EXPECT_EQ(train::mmlu_subject("x/abstract_algebra_dev.csv"), "abstract algebra");
  const auto items = train::read_task(TaskFormat::mmlu, path);
  ASSERT_EQ(items.size(), 5u);
  const std::string description = "The following are multiple choice questions (with answers) about high school physics.\n\n";
  EXPECT_EQ(train::item_context(items, 0, 0, 1),
            description + "What is the SI unit of force?\nA. newton\nB. joule\nC. watt\nD. pascal\nAnswer:");
  EXPECT_EQ(items[0].choices, (std::vector<std::string>{"A", "B", "C", "D"}));
  EXPECT_EQ(items[1].query,
            "A car goes 100 m in 5 s, at a steady speed. What is its speed?\nA. 10 m/s\nB. 20 m/s\nC. 50 m/s\nD. 500 m/s\nAnswer:");
  EXPECT_EQ(items[1].label, 1);
  EXPECT_EQ(items[2].query.rfind("Which word names the \"push or pull\" on an object?\nA. energy\n", 0), 0u);
  EXPECT_EQ(items[3].query,
            "A ball is thrown up.\nAt the top of its path, what is its speed?\nA. zero\nB. its largest\nC. the same as at "
            "the start\nD. 9.8 m/s\nAnswer:");
  EXPECT_EQ(items[3].line, 4);
  EXPECT_EQ(items[4].line, 6);  // the row after the two lines of the quoted question
  EXPECT_EQ(items[4].query.find("C. velocity, with its direction\n") != std::string::npos, true);
  EXPECT_EQ(items[4].label, 2);
}

TEST(MultipleChoiceFormats, CsvQuotingAndLineEnds) {
  const auto rows = train::parse_csv("a,\"b,c\",\"d\"\"e\"\r\n\r\n\"x\ny\",,z\n", "t.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fields, (std::vector<std::string>{"a", "b,c", "d\"e"}));
  EXPECT_EQ(rows[1].fields, (std::vector<std::string>{"x\ny", "", "z"}));
  EXPECT_EQ(rows[1].line, 3);
  expect_error([] { train::parse_csv("a,\"b\nc", "t.csv"); }, {"t.csv: line 1: a quoted field is not closed"});
}

TEST(MultipleChoiceFormats, ChoicesKeepTheContextAsGiven) {
  const auto items = train::read_task(TaskFormat::choices, kData + "/choices_sample.jsonl");
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[1].query, "Two plus two is ");
  EXPECT_EQ(items[1].choices, (std::vector<std::string>{"four", "seven"}));
}

TEST(MultipleChoiceFormats, ShotsAreOtherItemsSolvedBeforeTheQuery) {
  const auto items = train::parse_task(TaskFormat::choices,
                                       "{\"context\": \"q0\", \"choices\": [\"a\", \"b\"], \"label\": 1}\n"
                                       "{\"context\": \"q1\", \"choices\": [\"c\", \"d\"], \"label\": 0}\n"
                                       "{\"context\": \"q2\", \"choices\": [\"e\", \"f\"], \"label\": 1}\n",
                                       "c.jsonl");
  for (size_t i = 0; i < 3; ++i) {
    const std::string two = train::item_context(items, i, 2, 7);
    // the two others, each "query answer\n\n", in some order, then the item's query
    const std::vector<std::string> solved = {"q0 b\n\n", "q1 c\n\n", "q2 f\n\n"};
    for (size_t j = 0; j < 3; ++j) {
      if (j == i) continue;
      EXPECT_NE(two.find(solved[j]), std::string::npos) << two;
    }
    EXPECT_EQ(two.find(solved[i]), std::string::npos) << two;
    EXPECT_EQ(two.substr(two.size() - 2), "q" + std::to_string(i));
    EXPECT_EQ(two.size(), 2 * solved[0].size() + 2);
    EXPECT_EQ(two, train::item_context(items, i, 2, 7));  // the same seed, the same draw
  }
  EXPECT_EQ(train::item_context(items, 0, 5, 7).size(), 2 * 6 + 2u);  // at most the others
}

TEST(MultipleChoiceFormats, BadInputNamesFileLineAndField) {
  auto hellaswag = [](const std::string& line) { train::parse_task(TaskFormat::hellaswag, line, "h.jsonl"); };
  const std::string ok = R"("activity_label": "A", "ctx_a": "b", "ctx_b": "c", "endings": ["x", "y"])";
  expect_error([&] { hellaswag("\n{" + ok + R"(, "label": 2})"); }, {"h.jsonl: line 2: \"label\" 2 is out of range [0, 2)"});
  expect_error([&] { hellaswag("{" + ok + R"(, "label": -1})"); }, {"line 1: \"label\" -1 is out of range"});
  expect_error([&] { hellaswag(R"({"activity_label": "A", "ctx_a": "b", "ctx_b": "c", "endings": [], "label": 0})"); },
               {"h.jsonl: line 1: \"endings\" is empty: no choices"});
  expect_error([&] { hellaswag("{" + ok + "}"); }, {"h.jsonl: line 1: \"label\" is missing"});
  expect_error([&] { hellaswag("{" + ok + ", \"label\": 0"); }, {"h.jsonl: line 1: not JSON"});
  expect_error([&] { hellaswag(R"({"question": {"stem": "s", "choices": []}, "answerKey": "A"})"); },
               {"h.jsonl: line 1: an ARC line (\"question\", \"answerKey\"), not a hellaswag one: the file mixes formats"});
  expect_error([] { train::parse_task(TaskFormat::arc, R"({"question": {"stem": "s", "choices": []}, "answerKey": "A"})", "a.jsonl"); },
               {"a.jsonl: line 1: \"question.choices\" is empty: no choices"});
  expect_error([] {
    train::parse_task(TaskFormat::arc, R"({"question": {"stem": "s", "choices": [{"text": "t", "label": "1"}]}, "answerKey": "A"})",
                      "a.jsonl");
  }, {"a.jsonl: line 1: \"answerKey\" \"A\" is none of the choices' labels (\"1\")"});
  expect_error([] { train::parse_task(TaskFormat::choices, R"({"context": "c", "choices": ["a"], "label": 0, "endings": []})", "c.jsonl"); },
               {"c.jsonl: line 1: a hellaswag line"});
  expect_error([] { train::parse_task(TaskFormat::choices, R"({"context": "c", "choices": ["a", 3], "label": 0})", "c.jsonl"); },
               {"c.jsonl: line 1: \"choices[1]\" must be a string, got a number"});
  expect_error([] { train::parse_task(TaskFormat::mmlu, "q,a,b,c,A\n", "x/anatomy_test.csv"); },
               {"x/anatomy_test.csv: line 1: 5 columns, expected 6 (question, A, B, C, D, answer)"});
  expect_error([] { train::parse_task(TaskFormat::mmlu, "q,a,b,c,d,A\nq,a,b,c,d,E\n", "anatomy_test.csv"); },
               {"anatomy_test.csv: line 2: the answer (column 6) \"E\" is not one of A, B, C, D"});
  expect_error([] { train::parse_task(TaskFormat::choices, "\n\n", "c.jsonl"); }, {"c.jsonl: no items"});
  expect_error([] { train::task_format_from_name("piqa"); }, {"unknown task \"piqa\": give hellaswag, arc, mmlu or choices"});
}

// A character vocabulary: each character its own id, so the requests can be read off by hand.
tokenizers::Tokenizer char_tokenizer() {
  return tokenizers::Tokenizer(tokenizers::CharTokenizer::from_text(" Twoplusisfrevnt"));
}

TEST(MultipleChoiceRequests, TrailingSpacesMoveToTheContinuation) {
  const tokenizers::Tokenizer tok = char_tokenizer();
  const train::ChoiceRequests r = train::encode_choices(tok, "Two plus two is ", {"four", "seven"});
  EXPECT_EQ(r.context, tok.encode("Two plus two is"));
  ASSERT_EQ(r.continuations.size(), 2u);
  EXPECT_EQ(r.continuations[0], tok.encode("  four"));  // the moved space, the delimiter, the choice
  EXPECT_EQ(r.continuations[1], tok.encode("  seven"));
  const train::ChoiceRequests plain = train::encode_choices(tok, "Two plus two is", {"four"});
  EXPECT_EQ(plain.continuations[0], tok.encode(" four"));
}

// A Hugging Face tokenizer.json of the 256 bytes and one special token, "<|x|>" (id 256), with a
// tokenizer_config.json: config "" (none) or its text.
tokenizers::Tokenizer byte_tokenizer(const test::TempFolder& dir, const std::string& config) {
  std::string vocab;
  for (int b = 0; b < 256; ++b)
    vocab += (b ? "," : "") + json::quote(tokenizers::Gpt2Tokenizer::token_text(std::string(1, static_cast<char>(b)))) +
             ":" + std::to_string(b);
  test::write_bytes(dir.file("tokenizer.json"),
                    R"({"added_tokens":[{"id":256,"content":"<|x|>","special":true}],"normalizer":null,)"
                    R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)"
                    R"("decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{)" + vocab + R"(},"merges":[]}})");
  if (!config.empty()) test::write_bytes(dir.file("tokenizer_config.json"), config);
  return tokenizers::load_tokenizer(dir.file("tokenizer.json"));
}

TEST(MultipleChoiceRequests, TheBosTokenGoesFirstWhereTheTokenizerAddsOne) {
  test::TempFolder with_bos, without;
  const tokenizers::Tokenizer bos = byte_tokenizer(with_bos, R"({"bos_token":"<|x|>","add_bos_token":true})");
  const train::ChoiceRequests r = train::encode_choices(bos, "Q:", {"ab"});
  EXPECT_EQ(r.context, (std::vector<int64_t>{256, 'Q', ':'}));  // as Llama 3's <|begin_of_text|>
  EXPECT_EQ(r.continuations[0], (std::vector<int64_t>{' ', 'a', 'b'}));
  // an empty context: the prefix token alone (BOS, else the end-of-text), the continuation by itself
  EXPECT_EQ(train::encode_choices(bos, "", {"ab"}).context, (std::vector<int64_t>{256}));
  const tokenizers::Tokenizer plain = byte_tokenizer(without, R"({"eos_token":"<|x|>"})");
  EXPECT_EQ(train::encode_choices(plain, "Q:", {"ab"}).context, (std::vector<int64_t>{'Q', ':'}));  // as GPT-2 and Qwen
  const train::ChoiceRequests empty = train::encode_choices(plain, "", {"ab"});
  EXPECT_EQ(empty.context, (std::vector<int64_t>{256}));
  EXPECT_EQ(empty.continuations[0], (std::vector<int64_t>{' ', 'a', 'b'}));
}

TEST(MultipleChoiceScores, AccAndAccNormAsTheHarness) {
  // lengths in characters of the choice without the delimiter: "é" is one
  const train::ItemScore s = train::score_item({-4.0, -3.0, -6.5}, {"ab", "abcdef", "é"}, 0);
  EXPECT_EQ(s.lengths, (std::vector<int64_t>{2, 6, 1}));
  EXPECT_EQ(s.pred, 1);       // -3 is the largest
  EXPECT_EQ(s.pred_norm, 1);  // -0.5 per character
  EXPECT_EQ(train::score_item({-2.0, -2.0}, {"a", "a"}, 1).pred, 0);  // ties: the first, as numpy
  const std::vector<train::ItemScore> items = {train::score_item({-1, -2}, {"a", "b"}, 0),
                                               train::score_item({-1, -2}, {"a", "b"}, 1),
                                               train::score_item({-1, -2}, {"a", "bbbbb"}, 1)};
  const train::TaskScore t = train::summarize(items);
  EXPECT_EQ(t.items, 3);
  EXPECT_DOUBLE_EQ(t.acc, 1.0 / 3);
  EXPECT_DOUBLE_EQ(t.acc_norm, 2.0 / 3);
  // sample variance of {1,0,0}: 1/3; stderr sqrt(1/3 / 3)
  EXPECT_DOUBLE_EQ(*t.acc_stderr, std::sqrt(1.0 / 9));
  EXPECT_FALSE(train::summarize({items[0]}).acc_stderr.has_value());
}

::testing::AssertionResult close_lists(const std::vector<double>& got, const std::vector<double>& want, double rtol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > rtol * std::abs(want[i]))
      return ::testing::AssertionFailure() << "choice " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

TEST(MultipleChoiceScores, TheKVCacheGivesEachPairRunWhole) {
  manual_seed(3);
  models::GPTConfig config{.vocab_size = 15, .context_length = 24, .emb_dim = 16, .n_heads = 2, .n_layers = 2};
  models::GPTModel model(config);
  model.eval();
  const tokenizers::Tokenizer tok = char_tokenizer();
  const train::ChoiceRequests r = train::encode_choices(tok, "Two plus two is", {"four", "seven", "five", "n"});
  int64_t fast_tokens = 0, whole_tokens = 0;
  const std::vector<double> fast = train::choice_loglikelihoods(model, r, &fast_tokens);
  const std::vector<double> whole = train::choice_loglikelihoods_whole(model, r, &whole_tokens);
  EXPECT_TRUE(close_lists(fast, whole, 1e-6));
  EXPECT_EQ(fast_tokens, 15 + 4 + 5 + 4 + 1);  // the context once, then each choice's ids but its last
  EXPECT_EQ(whole_tokens, 4 * 15 + 4 + 5 + 4 + 1);
  // a context past the model's: the left of it goes, as the harness cuts it, for both
  const train::ChoiceRequests longer = train::encode_choices(tok, "Two plus two is two plus two is", {"four", "n"});
  EXPECT_TRUE(close_lists(train::choice_loglikelihoods(model, longer), train::choice_loglikelihoods_whole(model, longer), 1e-6));
}

TEST(MultipleChoiceScores, TheKVCacheGivesEachPairRunWholeOnQwen3) {
  models::HfLlama hf = models::load_hf_llama(std::string(TG_REFERENCE_DIR) + "/hf_llama/qwen3/f32");
  const train::ChoiceRequests r{{1, 5, 9, 13, 2, 40}, {{7, 8, 9}, {60}, {3, 3, 3, 3, 3}}};
  EXPECT_TRUE(close_lists(train::choice_loglikelihoods(*hf.model, r), train::choice_loglikelihoods_whole(*hf.model, r), 1e-6));
}

}  // namespace
}  // namespace tg
