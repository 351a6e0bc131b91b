// examples/generate as a user runs it to compare with another implementation: the prompt given
// as token ids (--prompt-ids), and its logits written to a file (--logits-out).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/io/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "examples/gpt/checkpoint.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::vector<std::string> kTinyRun = {"--steps", "2", "--batch", "2", "--context", "8", "--emb-dim", "8",
                                           "--heads", "2", "--layers", "1", "--eval-batches", "1", "--warmup", "1",
                                           "--sample-tokens", "1", "--threads", "1", "--out"};

std::string tiny_run(const TempFolder& dir) {
  std::vector<std::string> args = kTinyRun;
  args.push_back(dir.file("run"));
  const ProgramRun r = run_program(example_program("train_gpt"), args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir.file("run");
}

TEST(GenerateProgram, LogitsOutHoldsThePromptsLogitsFromPromptIds) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  const std::string run = tiny_run(dir), logits_path = dir.file("logits.safetensors");
  const ProgramRun r = run_program(example_program("generate"),
                                   {"--ckpt", run, "--prompt-ids", "1,2,3,1", "--tokens", "2", "--logits-out",
                                    logits_path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const NamedTensors saved = load_safetensors(logits_path);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].first, "logits");

  examples::SavedModel model = examples::load_saved_model(run);
  NoGradGuard no_grad;
  const Tensor expected = model.model->forward(from_vector(std::vector<int64_t>{1, 2, 3, 1}, {1, 4})).reshape({4, -1});
  ASSERT_EQ(saved[0].second.sizes(), expected.sizes());
  EXPECT_EQ(saved[0].second.tolist<float>(), expected.tolist<float>());  // the same forward, the same bits
}

TEST(GenerateProgram, BadPromptIdsAreOneLineUsageErrors) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  const std::string run = tiny_run(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1,x", "--prompt-ids: item 2 (\"x\") is not a token id"},
      {"1,,2", "--prompt-ids: item 2 (\"\") is not a token id"},
      {"-1", "--prompt-ids: item 1 (\"-1\") is out of the vocabulary's range [0, "},
      {"100000", "--prompt-ids: item 1 (\"100000\") is out of the vocabulary's range [0, "},
  };
  for (const auto& [ids, message] : cases) {
    const ProgramRun r = run_program(example_program("generate"), {"--ckpt", run, "--prompt-ids", ids});
    EXPECT_EQ(r.exit_code, 2) << ids;
    EXPECT_TRUE(has_part(r.output, "generate: " + message)) << r.output;
  }
  const ProgramRun both = run_program(example_program("generate"), {"--ckpt", run, "--prompt-ids", "1", "--prompt", "a"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_TRUE(has_part(both.output, "give --prompt or --prompt-ids, not both")) << both.output;
}

}  // namespace
}  // namespace tg::test
