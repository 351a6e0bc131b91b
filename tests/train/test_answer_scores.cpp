// train/answer_scores.h: SQuAD's normalisation, exact match and F1, worked out by hand from its
// evaluation script; the chapter 7 judge prompt and the score read from a reply; and evaluate
// --task instructions end to end on the tiny instruct model of tests/reference/instruct.
#include "train/answer_scores.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/json.h"
#include "test_util.h"

namespace tg::test {
namespace {

TEST(AnswerScores, NormalizeAsSquadsScript) {
  // lower, drop punctuation, drop the articles as whole words, one space between words
  EXPECT_EQ(train::normalize_answer("The Cat sat."), "cat sat");
  EXPECT_EQ(train::normalize_answer("  A  man, a plan, a canal: Panama! "), "man plan canal panama");
  EXPECT_EQ(train::normalize_answer("theatre and anthem"), "theatre and anthem");  // not whole words
  EXPECT_EQ(train::normalize_answer("an_apple"), "anapple");  // "_" is punctuation, dropped first
  EXPECT_EQ(train::normalize_answer("the-end"), "theend");
  EXPECT_EQ(train::normalize_answer("Don't\tstop\n"), "dont stop");
  EXPECT_EQ(train::normalize_answer("THE"), "");
  EXPECT_EQ(train::normalize_answer("Caf\xc3\xa9 the"), "caf\xc3\xa9");  // UTF-8 letters are word bytes
  EXPECT_EQ(train::normalize_answer("the\xc3\xa9"), "the\xc3\xa9");     // so "the" is not a word here
}

TEST(AnswerScores, ExactMatchAndF1) {
  EXPECT_EQ(train::exact_match("Paris.", "paris"), 1.0);
  EXPECT_EQ(train::exact_match("The Paris", "paris"), 1.0);
  EXPECT_EQ(train::exact_match("Paris, France", "paris"), 0.0);
  // "cat sat on mat" against "cat on mat": 3 common, precision 3/4, recall 1
  EXPECT_DOUBLE_EQ(train::token_f1("the cat sat on the mat", "a cat on a mat"), 2 * 0.75 / 1.75);
  EXPECT_DOUBLE_EQ(train::token_f1("cat cat", "cat"), 2 * 0.5 / 1.5);  // a word counts as often as both have it
  EXPECT_EQ(train::token_f1("dog", "cat"), 0.0);
  EXPECT_EQ(train::token_f1("", ""), 1.0);  // SQuAD 2.0: both without words
  EXPECT_EQ(train::token_f1("the", "."), 1.0);
  EXPECT_EQ(train::token_f1("x", ""), 0.0);
  EXPECT_EQ(train::token_f1("", "x"), 0.0);
}

TEST(AnswerScores, TheJudgesPromptAndScore) {
  EXPECT_EQ(train::judge_prompt("In", "mice", "mouses"),
            "Given the input `In` and correct output `mice`, score the model response `mouses` on a scale from 0 to "
            "100, where 100 is the best score. Respond with the integer number only.");
  EXPECT_EQ(train::judge_score("87"), 87);
  EXPECT_EQ(train::judge_score(" 87."), 87);
  EXPECT_EQ(train::judge_score("Score: 90/100"), 90);
  EXPECT_EQ(train::judge_score("100"), 100);
  EXPECT_EQ(train::judge_score("0"), 0);
  EXPECT_EQ(train::judge_score("007"), 7);
  EXPECT_EQ(train::judge_score("101"), std::nullopt);
  EXPECT_EQ(train::judge_score("1000"), std::nullopt);
  EXPECT_EQ(train::judge_score("I cannot say"), std::nullopt);
  EXPECT_EQ(train::replacing_invalid_utf8("a\xff" "b\xc3"), "a\xef\xbf\xbd" "b\xef\xbf\xbd");
  EXPECT_EQ(train::replacing_invalid_utf8("caf\xc3\xa9"), "caf\xc3\xa9");
}

const std::string kRoot = std::string(TG_REFERENCE_DIR) + "/../..";
const std::string kModel = std::string(TG_REFERENCE_DIR) + "/instruct";

std::vector<json::Value> json_lines(const std::string& text) {
  std::vector<json::Value> out;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1)
    out.push_back(json::parse(text.substr(begin, end - begin), "a line"));
  return out;
}

TEST(EvaluateInstructions, AnswersAreScoredAgainstTheReferencesAndByAJudge) {
  const std::string evaluate = example_program("evaluate");
  if (evaluate.empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  const std::string data = kRoot + "/examples/data/instructions.jsonl", out = dir.file("answers.jsonl");
  ProgramRun r = run_program(evaluate, {"--ckpt", kModel, "--task", "instructions", "--data", data, "--limit", "4",
                                        "--max-tokens", "12", "--out", out, "--threads", "1", "--judge", kModel});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value summary = last_json_line(r.output);
  EXPECT_EQ(summary["items"].as_int64(), 4);
  const std::vector<json::Value> lines = json_lines(read_bytes(out));
  ASSERT_EQ(lines.size(), 4u);
  const std::vector<json::Value> examples = json_lines(read_bytes(data));
  double matches = 0, f1 = 0;
  int64_t judged = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const json::Value& line = lines[i];
    EXPECT_EQ(line["reference"].as_string(), examples[i]["output"].as_string());
    EXPECT_EQ(line["line"].as_int64(), static_cast<int64_t>(i + 1));
    const std::string answer = line["answer"].as_string();
    EXPECT_EQ(line["exact_match"].as_double(), train::exact_match(answer, line["reference"].as_string()));
    EXPECT_EQ(line["f1"].as_double(), train::token_f1(answer, line["reference"].as_string()));
    matches += line["exact_match"].as_double();
    f1 += line["f1"].as_double();
    EXPECT_TRUE(line.contains("judge_reply"));
    if (!line["judge_score"].is_null()) {
      ++judged;
      EXPECT_GE(line["judge_score"].as_double(), 0);
      EXPECT_LE(line["judge_score"].as_double(), 100);
    }
  }
  EXPECT_DOUBLE_EQ(summary["exact_match"].as_double(), matches / 4);
  EXPECT_DOUBLE_EQ(summary["f1"].as_double(), f1 / 4);
  EXPECT_EQ(summary["judge_unparsed"].as_int64(), 4 - judged);
  // the tiny model's 256 positions hold no judge prompt (430 tokens): said, and counted as unparsed
  EXPECT_TRUE(has_part(r.output, "4 of 4 judge prompts did not fit --judge")) << r.output;
  EXPECT_TRUE(summary["judge_score"].is_null());

  // conversations: the reference is the last assistant turn
  const std::string chats = kRoot + "/examples/data/chats.jsonl";
  r = run_program(evaluate, {"--ckpt", kModel, "--task", "instructions", "--data", chats, "--limit", "2",
                             "--max-tokens", "8", "--out", out, "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<json::Value> chat_lines = json_lines(read_bytes(out));
  ASSERT_EQ(chat_lines.size(), 2u);
  const std::vector<json::Value> conversations = json_lines(read_bytes(chats));
  const json::Value& messages = conversations[0]["messages"];
  std::string last_reply;
  for (size_t k = 0; k < messages.size(); ++k)
    if (messages[k]["role"].as_string() == "assistant") last_reply = messages[k]["content"].as_string();
  EXPECT_EQ(chat_lines[0]["reference"].as_string(), last_reply);
  EXPECT_FALSE(last_json_line(r.output).contains("judge_score"));

  // what does not go together, and a bad line: one line, nothing written
  std::filesystem::remove(out);
  r = run_program(evaluate, {"--ckpt", kModel, "--task", "arc", "--data", data, "--judge", kModel});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has_part(r.output, "--judge goes with --task instructions")) << r.output;
  r = run_program(evaluate, {"--ckpt", kModel, "--task", "instructions", "--data", data, "--shots", "2"});
  EXPECT_EQ(r.exit_code, 2);
  const std::string bad = dir.file("bad.jsonl");
  write_bytes(bad, read_bytes(data).substr(0, 200) + "\n{\"instruction\": \"x\"}\n");
  r = run_program(evaluate, {"--ckpt", kModel, "--task", "instructions", "--data", bad, "--out", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has_part(r.output, "bad.jsonl: line ")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tg::test
