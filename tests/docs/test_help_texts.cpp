// tests/docs/test_help_texts.cpp — the programs' --help, as the guides send readers to it: asked
// for, it is an answer (exit 0), and it says what the code does today.
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace {

TEST(HelpTexts, BpeHelpListsItsCommandsAndExitsZero) {
  const std::string bpe = tg::test::example_program("bpe");
  if (bpe.empty()) GTEST_SKIP() << "the examples are not built";
  for (const char* flag : {"--help", "-h"}) {
    const tg::test::ProgramRun r = tg::test::run_program(bpe, {flag});
    EXPECT_EQ(r.exit_code, 0) << "bpe " << flag << ":\n" << r.output;
    for (const char* command : {"train", "encode", "decode", "render-chat"})
      EXPECT_NE(r.output.find(command), std::string::npos) << "bpe " << flag << " does not name " << command;
  }
  // A command line that is wrong stays a usage error.
  const tg::test::ProgramRun bad = tg::test::run_program(bpe, {"tokenize"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("unknown command 'tokenize'"), std::string::npos) << bad.output;
}

TEST(HelpTexts, GenerateHelpSpeaksOfEveryTokenizer) {
  const std::string generate = tg::test::example_program("generate");
  if (generate.empty()) GTEST_SKIP() << "the examples are not built";
  const tg::test::ProgramRun r = tg::test::run_program(generate, {"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // A Llama or Qwen folder with a tokenizer.json takes --prompt; only one without takes --prompt-ids.
  EXPECT_EQ(r.output.find("Qwen3 folder (with --prompt-ids)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("without one takes --prompt-ids"), std::string::npos) << r.output;
  // top-k and top-p pick among tokens, whatever the tokenizer.
  EXPECT_EQ(r.output.find("likely characters"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the k most likely tokens"), std::string::npos) << r.output;
}

}  // namespace
