// examples/evaluate as a user runs it, end to end from text: on the small GPT-2 folder
// tests/reference/instruct and each sample file of examples/data/, every choice's log-likelihood
// in --out equals the PyTorch twin's (examples/pytorch/evaluate.py, its own prompts and GPT-2
// tokenizer and its own mt19937_64 draw of --shots; tests/reference/multiple_choice_torch.json's
// "end_to_end": each file with no shots, MMLU's with 2 and ARC's with 3) within 1e-5 relative, and
// the last line of stdout is the summary. Bad data is one line naming the file, the line and the
// field, exit 1, and --out is not written; --help exits 0. --task perplexity scores a text as
// train_gpt --eval-only does (the same loss, perplexity and bits per byte), and with --quantize int8
// its bits per byte move by less than 0.5%.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/json.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::string kRoot = std::string(TG_REFERENCE_DIR) + "/../..";
const std::string kModel = std::string(TG_REFERENCE_DIR) + "/instruct";

std::string last_line(const std::string& output) {
  const size_t end = output.find_last_not_of('\n');
  const size_t begin = output.rfind('\n', end);
  return output.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

TEST(EvaluateProgram, EachSampleFilesLogLikelihoodsAreTheTwins) {
  const std::string evaluate = example_program("evaluate");
  if (evaluate.empty()) GTEST_SKIP() << "the examples are not built";
  const json::Value reference = json::parse_file(std::string(TG_REFERENCE_DIR) + "/multiple_choice_torch.json");
  double worst = 0;
  for (const json::Member& task : reference["end_to_end"].as_object()) {
    SCOPED_TRACE(task.key);
    TempFolder dir;
    const ProgramRun r = run_program(evaluate, {"--ckpt", kModel, "--task", task.value["task"].as_string(), "--data",
                                                kRoot + "/" + task.value["data"].as_string(), "--out",
                                                dir.file("items.jsonl"), "--threads", "1", "--shots",
                                                std::to_string(task.value["shots"].as_int64()), "--seed",
                                                std::to_string(task.value["seed"].as_int64())});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json::Value summary = json::parse(last_line(r.output), "stdout");
    for (const char* key : {"task", "items", "acc", "acc_stderr", "acc_norm", "acc_norm_stderr", "tokens_per_s"})
      EXPECT_TRUE(summary.contains(key)) << key << " missing from " << last_line(r.output);
    const json::Value& want = task.value["loglikelihoods"];
    EXPECT_EQ(summary["items"].as_int64(), static_cast<int64_t>(want.size()));
    const std::string items = read_bytes(dir.file("items.jsonl"));
    size_t begin = 0, index = 0, correct = 0;
    for (size_t end; (end = items.find('\n', begin)) != std::string::npos; begin = end + 1, ++index) {
      const json::Value line = json::parse(items.substr(begin, end - begin), "items.jsonl");
      EXPECT_EQ(line["index"].as_int64(), static_cast<int64_t>(index));
      const json::Value& got = line["loglikelihoods"];
      ASSERT_EQ(got.size(), want[index].size());
      for (size_t c = 0; c < got.size(); ++c) {
        const double rel = std::abs(got[c].as_double() - want[index][c].as_double()) / std::abs(want[index][c].as_double());
        worst = std::max(worst, rel);
        EXPECT_LE(rel, 1e-5) << "item " << index << ", choice " << c << ": " << got[c].as_double() << " vs the twin's "
                             << want[index][c].as_double();
      }
      correct += line["pred"].as_int64() == line["label"].as_int64();
    }
    EXPECT_EQ(index, want.size());
    EXPECT_DOUBLE_EQ(summary["acc"].as_double(), static_cast<double>(correct) / static_cast<double>(index));
  }
  std::printf("largest relative difference from the twin, text to score: %.3g\n", worst);
}

TEST(EvaluateProgram, BadDataIsOneLineAndNothingIsWritten) {
  const std::string evaluate = example_program("evaluate");
  if (evaluate.empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  write_bytes(dir.file("mixed.jsonl"),
              read_bytes(kRoot + "/examples/data/hellaswag_sample.jsonl") +
                  R"({"question": {"stem": "s", "choices": [{"text": "t", "label": "A"}]}, "answerKey": "A"})" + "\n");
  const ProgramRun r = run_program(evaluate, {"--ckpt", kModel, "--task", "hellaswag", "--data", dir.file("mixed.jsonl"),
                                              "--out", dir.file("items.jsonl")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "evaluate: " + dir.file("mixed.jsonl") +
                          ": line 6: an ARC line (\"question\", \"answerKey\"), not a hellaswag one: the file mixes formats\n");
  EXPECT_FALSE(std::filesystem::exists(dir.file("items.jsonl")));
  const ProgramRun help = run_program(evaluate, {"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("--shots"), std::string::npos) << help.output;
}

TEST(EvaluateProgram, PerplexityIsTrainGptsEvalOnlyAndInt8MovesItLittle) {
  const std::string evaluate = example_program("evaluate"), train_gpt = example_program("train_gpt");
  if (evaluate.empty() || train_gpt.empty()) GTEST_SKIP() << "the examples are not built";
  const std::string text = kRoot + "/examples/data/text.txt";
  const ProgramRun r = run_program(evaluate, {"--ckpt", kModel, "--task", "perplexity", "--data", text});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value got = json::parse(last_line(r.output), "stdout");
  for (const char* key : {"task", "tokens", "bytes", "loss", "perplexity", "bits_per_byte", "tokens_per_s"})
    EXPECT_TRUE(got.contains(key)) << key << " missing from " << last_line(r.output);
  const ProgramRun t = run_program(train_gpt, {"--eval-only", "--init-from", kModel, "--data", text});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const json::Value want = json::parse(t.output.substr(0, t.output.find('\n')), "train_gpt's line");
  EXPECT_EQ(got["tokens"].as_int64(), want["tokens"].as_int64());
  EXPECT_EQ(got["bytes"].as_int64(), want["bytes"].as_int64());
  EXPECT_DOUBLE_EQ(got["loss"].as_double(), want["loss"].as_double());
  EXPECT_DOUBLE_EQ(got["bits_per_byte"].as_double(), want["bpb"].as_double());
  const ProgramRun q = run_program(evaluate, {"--ckpt", kModel, "--task", "perplexity", "--data", text, "--quantize", "int8"});
  ASSERT_EQ(q.exit_code, 0) << q.output;
  const json::Value small = json::parse(last_line(q.output), "stdout");
  EXPECT_NE(small["loss"].as_double(), got["loss"].as_double());
  EXPECT_LT(std::abs(small["bits_per_byte"].as_double() / got["bits_per_byte"].as_double() - 1), 0.005);
  // what does not go
  TempFolder dir;
  write_bytes(dir.file("one.txt"), "a");
  const ProgramRun one = run_program(evaluate, {"--ckpt", kModel, "--task", "perplexity", "--data", dir.file("one.txt")});
  EXPECT_NE(one.exit_code, 0);
  EXPECT_NE(one.output.find("perplexity needs at least 2"), std::string::npos) << one.output;
  const ProgramRun shots =
      run_program(evaluate, {"--ckpt", kModel, "--task", "perplexity", "--data", text, "--shots", "2"});
  EXPECT_NE(shots.exit_code, 0);
  EXPECT_NE(shots.output.find("--shots does not go with --task perplexity"), std::string::npos) << shots.output;
}

}  // namespace
}  // namespace tg::test
