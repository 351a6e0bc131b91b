// examples/generate as a user runs it: to compare with another implementation, the prompt given
// as token ids (--prompt-ids) and its logits written to a file (--logits-out); the text it prints
// as it writes (the text write_text returns whole); stopping at GPT-2's <|endoftext|> unless
// --ignore-eos; and sampling flags out of range, each a one-line usage error naming the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "io/json.h"
#include "models/hf/hf_llama.h"
#include "models/llama.h"
#include "tests/fetched_files.h"
#include "tests/models/padded_vocabulary.h"
#include "models/generation/generate.h"
#include "models/saved_model.h"
#include "train/run_folder.h"
#include "train/instructions.h"
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

  models::SavedModel model = models::load_saved_model(run);
  NoGradGuard no_grad;
  const Tensor expected = model.model->forward(from_vector(std::vector<int64_t>{1, 2, 3, 1}, {1, 4})).reshape({4, -1});
  ASSERT_EQ(saved[0].second.sizes(), expected.sizes());
  EXPECT_EQ(saved[0].second.tolist<float>(), expected.tolist<float>());  // the same forward, the same bits
}

// A Hugging Face Llama / Qwen folder (tests/reference/hf_llama, written by the PyTorch twin): greedy
// ids and the prompt's logits are the twin's, and the ids go to --ids-out as a JSON array.
TEST(GenerateProgram, ALlamaOrQwenFolderWritesTheTwinsGreedyIdsAndLogits) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  const std::string fixtures = std::string(TG_REFERENCE_DIR) + "/hf_llama";
  Tensor ids, greedy, logits;
  for (auto& [name, t] : load_safetensors(fixtures + "/logits.safetensors")) {
    if (name == "ids") ids = t.select(0, 0);                      // (10)
    if (name == "qwen3_bf16_greedy") greedy = t.select(0, 0);     // (18)
    if (name == "qwen3_bf16") logits = t.select(0, 0);            // (10, V)
  }
  std::string prompt;
  for (int64_t id : ids.tolist<int64_t>()) prompt += (prompt.empty() ? "" : ",") + std::to_string(id);
  TempFolder dir;
  const ProgramRun r = run_program(example_program("generate"),
                                   {"--ckpt", fixtures + "/qwen3/bf16", "--prompt-ids", prompt, "--tokens", "8",
                                    "--temperature", "0", "--ids-out", dir.file("ids.json"), "--logits-out",
                                    dir.file("logits.safetensors")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<int64_t> want = greedy.narrow(0, 10, 8).tolist<int64_t>();
  std::string line, json = "[";
  for (int64_t id : want) {
    line += (line.empty() ? "" : ",") + std::to_string(id);
    json += (json.size() > 1 ? ", " : "") + std::to_string(id);
  }
  EXPECT_TRUE(has_part(r.output, line + "\n")) << r.output;
  EXPECT_EQ(test::read_bytes(dir.file("ids.json")), json + "]\n");
  EXPECT_TRUE(test::all_close(load_safetensors(dir.file("logits.safetensors"))[0].second, logits, 1e-5, 1e-5));

  const ProgramRun text = run_program(example_program("generate"), {"--ckpt", fixtures + "/qwen3/bf16", "--prompt", "hi"});
  EXPECT_NE(text.exit_code, 0);
  EXPECT_TRUE(has_part(text.output, "--prompt: " + fixtures + "/qwen3/bf16 has no tokenizer.json; give the prompt as --prompt-ids"))
      << text.output;
}

// --quantize int8 (nn/quantize.h): the same folder writes from int8 weights; the prompt's logits
// move from the float32 path's, by less than 5% of the largest (the weights move by at most half a
// group's step); --quantize takes none or int8.
TEST(GenerateProgram, QuantizedToInt8TheLogitsMoveLittle) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  const std::string folder = std::string(TG_REFERENCE_DIR) + "/hf_llama/qwen3/bf16";
  TempFolder dir;
  Tensor logits[2];
  for (int q = 0; q < 2; ++q) {
    const std::string path = dir.file("logits" + std::to_string(q) + ".safetensors");
    const ProgramRun r = run_program(example_program("generate"),
                                     {"--ckpt", folder, "--prompt-ids", "3,1,4,1,5,9,2,6", "--tokens", "4",
                                      "--temperature", "0", "--quantize", q ? "int8" : "none", "--logits-out", path});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    logits[q] = load_safetensors(path)[0].second;
  }
  EXPECT_FALSE(test::same_bytes(logits[1], logits[0]));
  const double spread = logits[0].abs().max().item<double>(), moved = (logits[1] - logits[0]).abs().max().item<double>();
  EXPECT_LT(moved, 0.05 * spread) << moved << " of " << spread;
  const ProgramRun bad = run_program(example_program("generate"), {"--ckpt", folder, "--prompt-ids", "1", "--quantize", "int4"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(has_part(bad.output, "--quantize")) << bad.output;
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

// What generate prints as it writes is the text write_text returns whole (the same generator), for
// each of several samples.
TEST(GenerateProgram, PrintsWhatWriteTextReturns) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  const std::string run = tiny_run(dir);
  const ProgramRun r = run_program(example_program("generate"), {"--ckpt", run, "--prompt", "The ", "--tokens", "40",
                                                                 "--temperature", "1.5", "--seed", "3", "--samples", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  models::SavedModel saved = models::load_saved_model(run);
  Generator gen(3);
  std::string want;
  for (int k = 1; k <= 2; ++k) {
    want += "--- sample " + std::to_string(k) + " ---\n" +
            models::write_text(*saved.model, *saved.tokenizer, saved.tokenizer->encode("The "), 40,
                                 {.temperature = 1.5}, gen) +
            "\n";
  }
  EXPECT_EQ(r.output, want);
}

const std::string kGpt2 = std::string(TG_REFERENCE_DIR) + "/instruct";  // byte-level GPT-2 tokens, <|endoftext|> 276

// Streamed into a stream, the text is what write_text returns, and no flush ends inside a character,
// though GPT-2's byte tokens (random ones, at a high temperature) split them (stray bytes, which
// no later byte completes, are printed as they come).
TEST(GenerateProgram, StreamedTextIsTheReturnedTextFlushedOnWholeCharacters) {
  struct Flushes : std::stringbuf {  // the text at each flush
    std::vector<std::string> seen;
    int sync() override {
      seen.push_back(str());
      return 0;
    }
  } flushes;
  std::ostream stream(&flushes);
  models::SavedModel saved = models::load_saved_model(kGpt2);
  Generator gen(11), again(11);
  const std::vector<int64_t> prompt = saved.tokenizer->encode("caf\xc3\xa9 ");
  const models::SamplingOptions options{.temperature = 100.0};
  const std::string text = models::write_text(*saved.model, *saved.tokenizer, prompt, 60, options, gen, &stream);
  EXPECT_EQ(flushes.str(), text);
  EXPECT_EQ(text, models::write_text(*saved.model, *saved.tokenizer, prompt, 60, options, again));
  ASSERT_GT(flushes.seen.size(), 2u);
  EXPECT_EQ(flushes.seen.back(), text);
  std::vector<bool> inside(text.size() + 1, false);  // offsets within a character (a well-formed sequence)
  for (size_t pos = 0; pos < text.size();) {
    uint32_t code_point = 0;
    const size_t length = std::max<size_t>(1, json::decode_utf8_at(text, pos, code_point));  // 0: a stray byte
    for (size_t k = 1; k < length; ++k) inside[pos + k] = true;
    pos += length;
  }
  size_t waited = 0;  // tokens held back whole: the start of a character (a flush that added nothing)
  for (size_t i = 0; i < flushes.seen.size(); ++i) {
    EXPECT_FALSE(inside[flushes.seen[i].size()]) << "flush " << i << " ends inside a character";
    waited += i > 0 && flushes.seen[i] == flushes.seen[i - 1];
  }
  EXPECT_GT(waited, 0u) << "no token ended inside a character: the case is not tested";
}

// A copy of the tiny GPT-2 whose every next token is <|endoftext|>: the final LayerNorm's output is
// its bias (weight 0), all ones, and only <|endoftext|>'s row of the tied embedding is all ones.
std::string gpt2_that_ends_at_once(const TempFolder& dir) {
  const std::string folder = dir.file("ends");
  std::filesystem::create_directories(folder);
  for (const char* name : {"config.json", "vocab.json", "merges.txt"})
    std::filesystem::copy_file(kGpt2 + "/" + name, folder + "/" + name);
  NamedTensors weights = load_safetensors(kGpt2 + "/model.safetensors");
  for (auto& [name, t] : weights) {
    if (name.ends_with("ln_f.weight")) t = zeros_like(t);
    if (name.ends_with("ln_f.bias")) t = ones_like(t);
    if (name.ends_with("wte.weight") || name.ends_with("lm_head.weight")) {
      t = t.clone();
      t.narrow(0, 276, 1).copy_(ones({1, t.size(1)}));
    }
  }
  save_safetensors(folder + "/model.safetensors", weights, {{"format", "pt"}});
  return folder;
}

TEST(GenerateProgram, StopsAtTheEndOfTextTokenUnlessIgnoreEos) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  const std::string ends = gpt2_that_ends_at_once(dir);
  ProgramRun r = run_program(example_program("generate"), {"--ckpt", ends, "--prompt", "hi", "--tokens", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "hi\n");  // stopped at the first token, which is not printed
  r = run_program(example_program("generate"),
                  {"--ckpt", ends, "--prompt", "hi", "--tokens", "3", "--ignore-eos", "--samples", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string three = "hi<|endoftext|><|endoftext|><|endoftext|>\n";
  EXPECT_EQ(r.output, "--- sample 1 ---\n" + three + "--- sample 2 ---\n" + three);
  r = run_program(example_program("generate"), {"--ckpt", ends, "--instruction", "Say hi.", "--tokens", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, tokenizers::alpaca_prompt("Say hi.", "") + "\n");
}

// A sampling flag out of its range is one line naming the flag, before any model is read: a
// temperature so small that the logits / temperature overflow float32 too.
TEST(GenerateProgram, SamplingFlagsOutOfRangeNameTheFlag) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--temperature", "1e-300"}, "generate: --temperature 1e-300: give 0 (greedy) or at least 0.0001"},
      {{"--temperature", "0.00001"}, "generate: --temperature 1e-05: give 0 (greedy) or at least 0.0001"},
      {{"--temperature", "1000"}, "generate: --temperature: 1000 is out of range [0, 100]"},
      {{"--top-p", "0"}, "generate: --top-p: 0 is out of range"},
      {{"--top-k", "-1"}, "generate: --top-k: -1 is out of range"},
      {{"--tokens", "2e9"}, "generate: --tokens"},
      {{"--logits-out", ""}, "generate: --logits-out: expected a file or folder name, got ''"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> all = {"--ckpt", "no_such_folder"};
    all.insert(all.end(), args.begin(), args.end());
    const ProgramRun r = run_program(example_program("generate"), all);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_TRUE(has_part(r.output, message)) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

// A tiny Qwen3 folder with Qwen3's tokenizer files and a vocabulary padded past the tokenizer's
// by 267 ids, as the real checkpoints (151,936 for 151,669), whose head makes those ids the
// likeliest whatever the input; "" when the tokenizer files are missing.
std::string padded_qwen_folder(const TempFolder& dir, int64_t context) {
  const std::string tokenizer = std::string(TG_TOKENIZER_CACHE_DIR) + "/qwen3-tokenizer";
  if (!fetched_file_ready(tokenizer + "/tokenizer.json")) return "";
  const int64_t tokens = tokenizers::load_tokenizer(tokenizer).vocab_size();
  manual_seed(5);
  models::LlamaForCausalLM model(tiny_qwen3_config(tokens + 267, context, 1));
  bias_toward_padding(model, tokens);  // a padded id is the likeliest
  const std::string folder = dir.file("qwen");
  std::filesystem::create_directories(folder);
  models::save_hf_llama(model, folder);
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(tokenizer + "/" + name, folder + "/" + name);
  return folder;
}

// generate --chat on such a folder: the padded ids are never sampled (a note says so once); a
// turn longer than the context is dropped with a note and the next line is read; the session
// ends at /quit with exit 0. The same turn in a --chat-messages file is an error.
TEST(GenerateProgram, ChatSamplesOnlyWritableIdsAndDropsATurnPastTheContext) {
  if (example_program("generate").empty()) GTEST_SKIP() << "the examples are not built";
  TempFolder dir;
  const std::string folder = padded_qwen_folder(dir, 40);
  if (folder.empty()) return;  // skipped (or failed) by fetched_file_ready
  std::string long_turn;
  for (int k = 0; k < 40; ++k) long_turn += " word";
  write_bytes(dir.file("input.txt"), long_turn + "\nHi\nAnd you?\n/quit\n");
  const std::string command = "'" + example_program("generate") + "' --ckpt '" + folder +
                              "' --chat --no-thinking --tokens 3 --temperature 0.7 < '" + dir.file("input.txt") + "'";
  const ProgramRun r = run_program("/bin/sh", {"-c", command});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_part(r.output, "generate: note: the model has " + std::to_string(151669 + 267))) << r.output;
  EXPECT_TRUE(has_part(r.output, ": the 267 ids the tokenizer cannot write are never sampled\n")) << r.output;
  EXPECT_TRUE(has_part(r.output, "generate: chat: the turn is dropped: the conversation with it is ")) << r.output;
  EXPECT_FALSE(has_part(r.output, "is no token of this tokenizer")) << r.output;
  size_t prompts = 0;  // "> " before each line read (a reply may hold more)
  for (size_t at = r.output.find("> "); at != std::string::npos; at = r.output.find("> ", at + 1)) ++prompts;
  EXPECT_GE(prompts, 4u) << r.output;  // every line was read, /quit included

  // --chat-messages FILE replies once, with no session to go on: a conversation that leaves no
  // room for a reply is an error naming the file and the sizes, not the interactive "/reset"
  write_bytes(dir.file("chat.json"), "[{\"role\": \"user\", \"content\": \"" + long_turn + "\"}]");
  const ProgramRun file = run_program(example_program("generate"),
                                      {"--ckpt", folder, "--chat-messages", dir.file("chat.json"), "--no-thinking"});
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_TRUE(has_part(file.output, "generate: " + dir.file("chat.json") + ": the conversation is ")) << file.output;
  EXPECT_TRUE(has_part(file.output, " tokens with the generation prompt, and the model's context (40) leaves no room "
                                    "for a reply: shorten it\n")) << file.output;
  EXPECT_FALSE(has_part(file.output, "/reset")) << file.output;
}

}  // namespace
}  // namespace tg::test
