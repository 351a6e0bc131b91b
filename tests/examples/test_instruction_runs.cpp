// train_gpt --data-format jsonl and generate --instruction, as a user runs them: a fine-tune of
// the tiny GPT-2 of tests/reference/instruct on its examples (a .jsonl --data is read as jsonl),
// resumed bit for bit, scored by --eval-only on the responses' tokens, then asked an instruction;
// a run from scratch on characters; and every bad line or command line is one line naming what
// was wrong (the file and the line).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "train/instructions.h"
#include "examples/gpt2_test_files.h"
#include "test_util.h"

namespace tg::test {
namespace {

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty()) GTEST_SKIP() << "the examples are not built"

const std::string kGpt2 = std::string(TG_REFERENCE_DIR) + "/instruct";  // read only: runs write elsewhere
const std::string kExamples = kGpt2 + "/examples.jsonl";  // 5 examples: 4 train, 1 validates

const std::vector<std::string> kSmall = {"--batch", "2", "--eval-every", "2", "--eval-batches", "1",
                                         "--sample-tokens", "4", "--threads", "1", "--warmup", "1"};

ProgramRun train_gpt(std::vector<std::string> args) {
  args.insert(args.end(), kSmall.begin(), kSmall.end());
  return run_program(example_program("train_gpt"), args);
}

json::Value first_json_line(const std::string& output) {
  return json::parse(output.substr(0, output.find('\n')), "eval-only output");
}

TEST(InstructionRuns, AFineTuneFromGpt2ResumesBitForBitAndAnswersAnInstruction) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::vector<std::string> common = {"--init-from", kGpt2, "--data", kExamples, "--lr", "1e-2"};
  std::vector<std::string> straight = common, half = common;
  straight.insert(straight.end(), {"--steps", "4", "--out", dir.file("straight")});
  half.insert(half.end(), {"--steps", "2", "--out", dir.file("resumed"), "--data-format", "jsonl"});
  ProgramRun r = train_gpt(straight);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "4 training and 1 validation examples; the loss counts their responses' tokens"))
      << r.output;
  EXPECT_TRUE(has_part(r.output, "steps of 2 examples (at most 256 tokens)")) << r.output;
  EXPECT_FALSE(has_part(r.output, "skipped")) << r.output;
  const json::Value config = json::parse_file(dir.file("straight") + "/config.json");
  EXPECT_EQ(config["tapegrad"]["train"]["data-format"].as_string(), "jsonl");  // inferred from .jsonl
  r = train_gpt(half);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  plan_steps(dir.file("resumed"), 4);  // a run of 4 stopped after 2 (the same rates so far)
  r = run_program(example_program("train_gpt"), {"--resume", dir.file("resumed"), "--steps", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto a = safetensors_values(dir.file("straight") + "/model.safetensors");
  EXPECT_NE(a, safetensors_values(kGpt2 + "/model.safetensors"));  // it trained
  EXPECT_EQ(a, safetensors_values(dir.file("resumed") + "/model.safetensors"));
  EXPECT_EQ(read_bytes(dir.file("straight") + "/samples.txt"), read_bytes(dir.file("resumed") + "/samples.txt"));
  // the sample answers the val example's prompt
  EXPECT_TRUE(has_part(read_bytes(dir.file("straight") + "/samples.txt"),
                       tokenizers::alpaca_prompt("Translate to English.", "caf\xc3\xa9 cr\xc3\xa8me")));

  // --eval-only: the run's val split, or all of a --data, scored on the responses' tokens
  r = run_program(example_program("train_gpt"), {"--eval-only", "--resume", dir.file("straight")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(first_json_line(r.output)["eval"].as_string(), "the val split of " + kExamples);
  r = run_program(example_program("train_gpt"), {"--eval-only", "--init-from", kGpt2, "--data", kExamples});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value eval = first_json_line(r.output);
  EXPECT_EQ(eval["tokens"].as_int64(), 50);  // make_instruct_reference.py's response tokens
  // PyTorch's loss over the same tokens (examples one at a time here, the same mean)
  const NamedTensors torch = load_safetensors(kGpt2 + "/batch.safetensors");
  const double want = std::find_if(torch.begin(), torch.end(), [](const auto& p) { return p.first == "loss"; })
                          ->second.item<double>();
  EXPECT_NEAR(eval["loss"].as_double(), want, 1e-5 * want);

  // generate --instruction: the template's prompt, then the answer
  r = run_program(example_program("generate"), {"--ckpt", dir.file("straight"), "--instruction",
                                                "Give the plural of the word.", "--input", "box", "--tokens", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, r.output.find("### Response:\n") + 14),
            tokenizers::alpaca_prompt("Give the plural of the word.", "box"));
}

// examples/data/instructions.jsonl, docs/fine-tune-on-a-laptop.md's small set: every line an
// example, and a run from scratch on its characters trains and answers.
TEST(InstructionRuns, TheExampleSetTrainsARunFromScratchOnCharacters) {
  const std::string set = std::string(TG_PYTORCH_DIR) + "/../data/instructions.jsonl";
  const std::vector<train::Instruction> all = train::parse_instructions(read_bytes(set), set);
  EXPECT_GE(all.size(), 40u);
  for (const train::Instruction& e : all) EXPECT_FALSE(e.instruction.empty() || e.output.empty()) << e.line;
  if (tokenizers::Gpt2Tokenizer::folder_has_files(TG_GPT2_TOKENIZER_DIR)) {  // GPT-2's tokens: all fit 64 of them
    const tokenizers::Tokenizer gpt2 = tokenizers::load_tokenizer(TG_GPT2_TOKENIZER_DIR);
    EXPECT_EQ(train::encode_instructions(all, gpt2, 63, set).skipped_lines, std::vector<int64_t>{});
  }
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  ProgramRun r = train_gpt({"--data", set, "--context", "256", "--emb-dim", "16", "--heads", "2", "--layers", "1",
                            "--steps", "2", "--out", dir.file("run")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "characters")) << r.output;
  r = run_program(example_program("generate"), {"--ckpt", dir.file("run"), "--instruction",
                                                "Give the plural of the word.", "--input", "box", "--tokens", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, tokenizers::alpaca_prompt("Give the plural of the word.", "box"))) << r.output;
}

TEST(InstructionRuns, ExamplesLongerThanTheContextAreSkippedAndCounted) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  // --context 186: the example of line 3 has 211 tokens (lines 1 to 5: 165, 149, 211, 137, 187)
  ProgramRun r = train_gpt({"--init-from", kGpt2, "--data", kExamples, "--context", "186", "--steps", "2", "--out",
                            dir.file("run")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "skipped 1 of 5 examples longer than the context (over 187 tokens for --context "
                                 "186): line 3"))
      << r.output;
  r = train_gpt({"--init-from", kGpt2, "--data", kExamples, "--context", "100", "--steps", "2", "--out",
                 dir.file("none")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "none of the 4 training examples fits the context")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("none"))) << "nothing is written";
}

TEST(InstructionRuns, BadLinesAndCommandLinesAreOneLineErrors) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string good = "{\"instruction\": \"Say hi.\", \"output\": \"hi\"}\n";
  struct Case {
    std::string name, text;
    std::string message;
  };
  const std::vector<Case> files = {
      {"a.jsonl", good + good + "{\"instruction\": \"x\", \"output\": }\n", "a.jsonl: line 3: not JSON"},
      {"b.jsonl", good + "[1, 2]\n", "b.jsonl: line 2: not a JSON object (got an array)"},
      {"c.jsonl", good + "{\"instruction\": \"x\"}\n", "c.jsonl: line 2: \"output\" is missing"},
      {"d.jsonl", good + "{\"instruction\": 5, \"output\": \"y\"}\n",
       "d.jsonl: line 2: \"instruction\" must be a string, got a number"},
      {"e.jsonl", "", "e.jsonl: the file is empty"},
      {"f.jsonl", "\n\n", "f.jsonl: no examples (every line is blank)"},
      {"g.jsonl", good, "g.jsonl: only 1 example: at least 2 are needed"},
  };
  for (const Case& c : files) {
    write_bytes(dir.file(c.name), c.text);
    for (const bool from_gpt2 : {false, true}) {
      std::vector<std::string> args = {"--data", dir.file(c.name), "--steps", "2", "--out", dir.file("run")};
      if (from_gpt2) args.insert(args.end(), {"--init-from", kGpt2});
      const ProgramRun r = train_gpt(args);
      EXPECT_EQ(r.exit_code, 1) << r.output;
      EXPECT_TRUE(has_part(r.output, c.message)) << r.output;
      EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
    }
  }
  write_bytes(dir.file("h.jsonl"), "\"a\"\n");
  ProgramRun r = run_program(example_program("train_gpt"),
                             {"--eval-only", "--init-from", kGpt2, "--data", dir.file("h.jsonl")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_part(r.output, "h.jsonl: line 1: not a JSON object (got a string)")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("run")));

  struct CommandLine {
    std::string program;
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<CommandLine> usage = {
      {"train_gpt", {"--data-format", "jsonl"}, "--data-format jsonl needs --data FILE"},
      {"train_gpt", {"--data-format", "csv"}, "--data-format"},
      {"generate", {"--ckpt", kGpt2, "--input", "box"}, "--input goes with --instruction"},
      {"generate", {"--ckpt", kGpt2, "--instruction", "a", "--prompt", "b"}, "--instruction makes the prompt"},
  };
  for (const CommandLine& c : usage) {
    r = run_program(example_program(c.program), c.args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(has_part(r.output, c.message)) << r.output;
  }
}

}  // namespace
}  // namespace tg::test
