// train_gpt, generate and --eval-only with a Hugging Face GPT-2 folder, as a user runs them: a
// run from GPT-2 starts from the folder's weights and tokenizer, saves in the same layout (so
// the folder it writes is one too), resumes bit for bit, and bad command lines are one line.
// The folder is a tiny GPT-2 made here: 2 layers, a 260-token vocabulary of GPT-2's kind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "models/hf/hf_gpt2.h"
#include "examples/gpt2_test_files.h"
#include "test_util.h"

namespace tg::test {
namespace {

#define SKIP_WITHOUT_EXAMPLES() \
  if (example_program("train_gpt").empty()) GTEST_SKIP() << "the examples are not built"

// dir: config.json, model.safetensors, vocab.json, merges.txt, and text.txt to train on.
void make_tiny_gpt2(const std::string& dir) {
  std::filesystem::create_directories(dir);
  write_bytes(dir + "/vocab.json", small_gpt2_vocab({"\xc4\xa0t", "he", "\xc4\xa0the", "<|endoftext|>"}));
  write_bytes(dir + "/merges.txt", "#version: 0.2\n\xc4\xa0 t\nh e\n\xc4\xa0t he\n");
  models::GPTConfig c{.vocab_size = 260, .context_length = 16, .emb_dim = 8, .n_heads = 2, .n_layers = 2,
                  .drop_rate = 0.1, .qkv_bias = true, .tie_weights = true};
  manual_seed(7);
  models::GPTModel model(c);
  models::save_hf_gpt2(model, dir);
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the fox saw the owl, and the owl saw the fox. ";
  write_bytes(dir + "/text.txt", text);
}

const std::vector<std::string> kSmall = {"--batch", "2", "--context", "8", "--eval-every", "2", "--eval-batches",
                                         "1", "--sample-tokens", "4", "--threads", "1", "--warmup", "1"};

ProgramRun train_gpt(std::vector<std::string> args) {
  args.insert(args.end(), kSmall.begin(), kSmall.end());
  return run_program(example_program("train_gpt"), args);
}

TEST(Gpt2Runs, ARunStartsFromTheFolderAndSavesInItsLayout) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string gpt2 = dir.file("gpt2"), run = dir.file("run");
  make_tiny_gpt2(gpt2);
  // lr 0: the weights saved after a step are the folder's, in the folder's names and layout
  ProgramRun r = train_gpt({"--init-from", gpt2, "--data", gpt2 + "/text.txt", "--steps", "2", "--lr", "0",
                            "--min-lr", "0", "--out", run});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "vocabulary of 260 BPE tokens")) << r.output;
  EXPECT_EQ(safetensors_values(run + "/model.safetensors"), safetensors_values(gpt2 + "/model.safetensors"));
  for (const char* name : {"vocab.json", "merges.txt"}) EXPECT_EQ(read_bytes(run + "/" + name), read_bytes(gpt2 + "/" + name));
  const json::Value config = json::parse_file(run + "/config.json");
  EXPECT_EQ(config["model_type"].as_string(), "gpt2");
  EXPECT_EQ(config["n_layer"].as_int64(), 2);
  EXPECT_EQ(config["tapegrad"]["train"]["init-from"].as_string(), gpt2);
  EXPECT_EQ(config["tapegrad"]["model"]["context_length"].as_int64(), 16);  // the model's, not --context
  const models::HfGpt2 loaded = models::load_hf_gpt2(run);             // a GPT-2 folder itself
  EXPECT_EQ(loaded.config.context_length, 16);

  // generate and --eval-only read both folders
  for (const std::string& folder : {gpt2, run}) {
    r = run_program(example_program("generate"), {"--ckpt", folder, "--prompt", " the fox", "--tokens", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.substr(0, 8), " the fox");
  }
  r = run_program(example_program("train_gpt"), {"--eval-only", "--init-from", gpt2, "--data", gpt2 + "/text.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::Value eval = json::parse(r.output.substr(0, r.output.find('\n')), "eval-only output");
  // every byte but the first token's ("t": "the" at the start has no space, so no merge makes it one)
  EXPECT_EQ(eval["bytes"].as_int64(), static_cast<int64_t>(read_bytes(gpt2 + "/text.txt").size()) - 1);
  EXPECT_GT(eval["loss"].as_double(), 0.0);
}

TEST(Gpt2Runs, AResumedRunContinuesBitForBit) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string gpt2 = dir.file("gpt2");
  make_tiny_gpt2(gpt2);
  const std::vector<std::string> common = {"--init-from", gpt2, "--data", gpt2 + "/text.txt", "--lr", "1e-2",
                                           "--min-lr", "1e-3"};
  std::vector<std::string> straight = common, half = common;
  straight.insert(straight.end(), {"--steps", "4", "--out", dir.file("straight")});
  half.insert(half.end(), {"--steps", "2", "--out", dir.file("resumed")});
  ProgramRun r = train_gpt(straight);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = train_gpt(half);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // the half run as one of 4 steps stopped after 2 (its rates so far are the same: the warmup's
  // and the cosine's first), resumed with the straight one's --steps and stopped by nothing else
  plan_steps(dir.file("resumed"), 4);
  r = run_program(example_program("train_gpt"), {"--resume", dir.file("resumed"), "--steps", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto a = safetensors_values(dir.file("straight") + "/model.safetensors"),
             b = safetensors_values(dir.file("resumed") + "/model.safetensors");
  EXPECT_NE(a, safetensors_values(gpt2 + "/model.safetensors"));  // it trained
  EXPECT_EQ(a, b);
}

TEST(Gpt2Runs, BadCommandLinesAreOneLineErrors) {
  SKIP_WITHOUT_EXAMPLES();
  TempFolder dir;
  const std::string gpt2 = dir.file("gpt2");
  make_tiny_gpt2(gpt2);
  const std::string text = gpt2 + "/text.txt";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--init-from", gpt2, "--data", text, "--layers", "3"}, 2, "--layers comes from the --init-from folder's"},
      {{"--init-from", gpt2, "--data", text, "--tokenizer", "char"}, 2, "--tokenizer char: GPT-2 reads its own"},
      {{"--init-from", gpt2, "--data", text, "--context", "17"}, 2,
       "--context (17) is longer than the model's context_length (16)"},
      {{"--init-from", dir.file("nowhere"), "--data", text}, 1, "not a Hugging Face GPT-2 folder"},
      {{"--eval-only", "--init-from", gpt2}, 2, "--eval-only --init-from needs --data FILE"},
      {{"--eval-only", "--init-from", gpt2, "--resume", gpt2, "--data", text}, 2, "one of them"},
  };
  for (const Case& c : cases) {
    const ProgramRun r = run_program(example_program("train_gpt"), c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.output;
    EXPECT_TRUE(has_part(r.output, c.message)) << r.output;
  }
}

}  // namespace
}  // namespace tg::test
