// Hugging Face tokenizer.json (tokenizers/hf_tokenizer.h) against an independent implementation:
// the ids of tests/reference/hf_tokenizer_reference.json (@lenml/tokenizers, a fork of
// transformers.js, run by tests/reference/make_hf_tokenizer_reference.mjs) under Qwen3's and
// Llama 3's real files, the ids decoded back, Llama 3's pattern and NFC on their own, the
// tokenizer_config.json fields, and each kind of bad file an error naming what is wrong.
#include "tokenizers/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "io/json.h"
#include "tokenizers/gpt2_tokenizer.h"
#include "tokenizers/nfc.h"
#include "tokenizers/pre_split.h"
#include "tokenizers/tokenizer.h"
#include "fetched_files.h"
#include "test_util.h"

namespace tg {
namespace {

const std::string kCache = TG_TOKENIZER_CACHE_DIR;

// The model's tokenizer (qwen3 or llama3), or nullptr when its files are missing (fetched_files.h:
// the test is then skipped, or failed under TG_REQUIRE_TOKENIZER_FILES=1).
const tokenizers::HfTokenizer* model_tokenizer(const std::string& model) {
  static std::map<std::string, tokenizers::HfTokenizer> loaded;
  const std::string path = kCache + "/" + model + "-tokenizer/tokenizer.json";
  if (!test::fetched_file_ready(path)) return nullptr;
  auto it = loaded.find(model);
  if (it == loaded.end()) it = loaded.emplace(model, tokenizers::HfTokenizer::from_file(path)).first;
  return &it->second;
}

std::vector<int64_t> ints(const json::Value& list) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < list.size(); ++i) out.push_back(list[i].as_int64());
  return out;
}

void expect_reference_ids(const std::string& model) {
  const tokenizers::HfTokenizer* tok = model_tokenizer(model);
  if (!tok) return;
  const json::Value ref = json::parse_file(std::string(TG_REFERENCE_DIR) + "/hf_tokenizer_reference.json");
  const json::Value& cases = ref["models"][model];
  ASSERT_GT(cases.size(), 40u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string text = cases[i]["text"].as_string();
    SCOPED_TRACE(model + " text " + std::to_string(i) + ": " + text);
    const std::vector<int64_t> ids = tok->encode(text);
    EXPECT_EQ(ids, ints(cases[i]["ids"]));
    if (tok->normalizes_nfc()) EXPECT_EQ(tok->decode(ids), tokenizers::nfc(text));
    else EXPECT_EQ(tok->decode(ids), text);
  }
}

TEST(HfTokenizer, Qwen3IdsAreTheReferences) { expect_reference_ids("qwen3"); }
TEST(HfTokenizer, Llama3IdsAreTheReferences) { expect_reference_ids("llama3"); }

// bpe encode and decode take the folder (and the file) as --tokenizer.
TEST(HfTokenizer, TheBpeProgramEncodesAndDecodesWithAFolder) {
  if (test::example_program("bpe").empty()) GTEST_SKIP() << "the examples are not built";
  if (!model_tokenizer("qwen3")) return;
  const json::Value ref = json::parse_file(std::string(TG_REFERENCE_DIR) + "/hf_tokenizer_reference.json");
  const json::Value& chat = ref["models"]["qwen3"][31];  // special tokens in the text
  test::TempFolder dir;
  test::write_bytes(dir.file("text.txt"), chat["text"].as_string());
  const test::ProgramRun r = test::run_program(test::example_program("bpe"),
                                               {"encode", "--tokenizer", kCache + "/qwen3-tokenizer", dir.file("text.txt")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string line;
  for (int64_t id : ints(chat["ids"])) line += (line.empty() ? "" : " ") + std::to_string(id);
  EXPECT_TRUE(test::has_part(r.output, line + "\n")) << r.output;
  test::write_bytes(dir.file("ids.txt"), line);
  const test::ProgramRun back = test::run_program(
      test::example_program("bpe"), {"decode", "--tokenizer", kCache + "/qwen3-tokenizer/tokenizer.json", dir.file("ids.txt")});
  ASSERT_EQ(back.exit_code, 0) << back.output;
  EXPECT_TRUE(test::has_part(back.output, chat["text"].as_string())) << back.output;
}

TEST(HfTokenizer, TheConfigGivesBosEosAndTheSpecialTokens) {
  const tokenizers::HfTokenizer* qwen = model_tokenizer("qwen3");
  if (!qwen) return;
  EXPECT_STREQ(qwen->pre_split_name(), "qwen2");
  EXPECT_TRUE(qwen->normalizes_nfc());
  EXPECT_EQ(qwen->bos_id(), -1);  // bos_token null
  EXPECT_EQ(qwen->eos_id(), qwen->token_id("<|im_end|>"));
  EXPECT_FALSE(qwen->add_bos());
  EXPECT_EQ(qwen->token_id("<|im_start|>"), 151644);
  EXPECT_EQ(qwen->vocab_size(), 151669);
  const tokenizers::HfTokenizer* llama = model_tokenizer("llama3");
  if (!llama) return;
  EXPECT_STREQ(llama->pre_split_name(), "llama3");
  EXPECT_FALSE(llama->normalizes_nfc());
  EXPECT_EQ(llama->bos_id(), 128000);
  EXPECT_EQ(llama->eos_id(), 128001);
  EXPECT_EQ(llama->decode({128000, 9906}), "<|begin_of_text|>Hello");
}

// Llama 3's pattern cut by hand, case by case (the regex's alternatives in order).
TEST(HfTokenizer, Llama3PatternCutsAsTheRegex) {
  auto cut = [](const std::string& text, int digits) {
    std::vector<std::string> chunks;
    for (size_t i = 0, n = 0; i < text.size(); i += n) {
      n = tokenizers::llama3_chunk_length(text, i, digits);
      chunks.push_back(text.substr(i, n));
    }
    return chunks;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(cut("I'M here", 3), (V{"I", "'M", " here"}));
  EXPECT_EQ(cut("x'LLy", 3), (V{"x", "'LL", "y"}));
  EXPECT_EQ(cut("12345", 3), (V{"123", "45"}));
  EXPECT_EQ(cut("12345", 1), (V{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(cut("\thello (world", 3), (V{"\thello", " (", "world"}));
  EXPECT_EQ(cut("a...\n\nb", 3), (V{"a", "...\n\n", "b"}));
  EXPECT_EQ(cut("x  \n \n  y", 3), (V{"x", "  \n \n", " ", " y"}));
  EXPECT_EQ(cut("end   ", 3), (V{"end", "   "}));
  EXPECT_EQ(cut("a  b", 3), (V{"a", " ", " b"}));
  EXPECT_EQ(cut("\n  foo", 3), (V{"\n", " ", " foo"}));
}

TEST(Nfc, ComposesOrdersAndKeepsWhatIsAlreadyComposed) {
  EXPECT_EQ(tokenizers::nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(tokenizers::nfc("\u1100\u1161\u11a8"), "\uac01");          // Hangul L V T
  EXPECT_EQ(tokenizers::nfc("\u212b"), "\u00c5");                      // Angstrom sign: a singleton
  EXPECT_EQ(tokenizers::nfc("q\u0307\u0323"), "q\u0323\u0307");        // reordered by class
  EXPECT_EQ(tokenizers::nfc("s\u0323\u0307"), "\u1e69");               // both marks composed
  EXPECT_EQ(tokenizers::nfc("\ufb01 \u2460"), "\ufb01 \u2460");        // compatibility forms stay (NFC, not NFKC)
  EXPECT_EQ(tokenizers::nfc("a\xff\xfe" "e\u0301"), "a\xff\xfe\u00e9");   // bytes that are not UTF-8 kept
  EXPECT_TRUE(tokenizers::nfc_quick_check("plain ASCII and caf\u00e9"));
  EXPECT_FALSE(tokenizers::nfc_quick_check("cafe\u0301"));
}

// A small tokenizer.json: bytes, two merges, an added token; edited to be wrong in one way each.
std::string small_json(const std::string& model_extra = "", const std::string& pre = "") {
  std::string vocab;
  for (int b = 0; b < 256; ++b) {
    vocab += (b ? "," : "") + json::quote(tokenizers::Gpt2Tokenizer::token_text(std::string(1, static_cast<char>(b)))) +
             ":" + std::to_string(b);
  }
  vocab += ",\"ab\":256,\"abc\":257";
  const std::string pre_tokenizer = pre.empty() ? R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})" : pre;
  return R"({"added_tokens":[{"id":258,"content":"<|x|>","special":true}],"normalizer":null,"pre_tokenizer":)" +
         pre_tokenizer + R"(,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE")" + model_extra +
         R"(,"vocab":{)" + vocab + R"(},"merges":["a b",["ab","c"]]}})";
}

TEST(HfTokenizer, ASmallFileEncodesWithItsMergesAndAddedToken) {
  const auto tok = tokenizers::HfTokenizer::from_json(small_json(), "small.json");
  EXPECT_EQ(tok.encode("abc<|x|>ab"), (std::vector<int64_t>{257, 258, 256}));
  EXPECT_EQ(tok.decode({257, 258, 256}), "abc<|x|>ab");
  test::expect_error([&] { tok.decode({259}); }, {"small.json: id 259 is no token of this tokenizer"});
}

TEST(HfTokenizer, BadFilesAreErrorsNamingTheFieldOrMerge) {
  auto error_of = [](const std::string& text, const std::vector<std::string>& parts) {
    test::expect_error([&] { tokenizers::HfTokenizer::from_json(text, "t.json"); }, parts);
  };
  std::string unigram = small_json();
  unigram.replace(unigram.find("\"type\":\"BPE\""), 12, "\"type\":\"Unigram\"");
  error_of(unigram, {"t.json: \"model\" is of type \"Unigram\": tapegrad reads byte-level BPE only"});
  std::string unknown = small_json();
  unknown.replace(unknown.find("\"a b\""), 5, "\"a zz\"");
  error_of(unknown, {"t.json: merges[0]: \"zz\" is not a token of the vocabulary"});
  error_of(small_json("", R"({"type":"Whitespace"})"),
           {"\"pre_tokenizer\" is of type \"Whitespace\": tapegrad reads Sequence [Split, ByteLevel] and ByteLevel"});
  error_of(small_json("", R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\w+"},)"
                          R"("behavior":"Isolated","invert":false},{"type":"ByteLevel","use_regex":false}]})"),
           {"the Split pattern \"\\\\w+\" is none that tapegrad knows"});
  error_of(small_json(",\"byte_fallback\":true"), {"byte_fallback is true: unsupported"});
  error_of(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})", {"vocab: no token for byte 0"});
}

// small_json with these added tokens in place of its one.
std::string with_added(const std::string& added_tokens) {
  std::string text = small_json();
  const std::string one = R"([{"id":258,"content":"<|x|>","special":true}])";
  return text.replace(text.find(one), one.size(), added_tokens);
}

TEST(HfTokenizer, AddedTokensMatchLeftmostThenLongest) {
  // "<a" and "<ab" overlap "a<abc": at each position the longest that starts there wins, the
  // leftmost position first; two tokens of one content: the first in the file
  const auto tok = tokenizers::HfTokenizer::from_json(
      with_added(R"([{"id":258,"content":"<a"},{"id":259,"content":"<ab"},{"id":260,"content":"b<"},)"
                 R"({"id":261,"content":"<ab"},{"id":262,"content":"<abcd"}])"),
      "t.json");
  EXPECT_EQ(tok.encode("x<abc"), (std::vector<int64_t>{'x', 259, 'c'}));
  EXPECT_EQ(tok.encode("<a<"), (std::vector<int64_t>{258, '<'}));
  EXPECT_EQ(tok.encode("b<abc<abcd"), (std::vector<int64_t>{260, 257, 262}));  // "b<" starts first
  EXPECT_EQ(tok.encode("<abc"), (std::vector<int64_t>{259, 'c'}));                  // "<abcd" not all there
  EXPECT_EQ(tok.token_id("<ab"), 259);
  EXPECT_EQ(tok.token_id("<"), '<');  // a prefix of added tokens is not one of them: the vocabulary's
  EXPECT_EQ(tok.token_id("<abc"), -1);
}

// 20,000 added tokens beginning with "e": each position walks the trie of their contents (their
// speed, 84-127 MB/s where a scan of every added token at every byte gave 0.1, is the fuzz
// stage's to watch, with its time limit per run: tests are not timed).
TEST(HfTokenizer, ManyAddedTokensOfOneFirstByteEncodeLeftmostLongest) {
  std::string added = "[";
  for (int i = 0; i < 20000; ++i)
    added += (i ? "," : "") + std::string(R"({"id":)") + std::to_string(258 + i) + R"(,"content":"e_tok_)" + std::to_string(i) + "\"}";
  const auto tok = tokenizers::HfTokenizer::from_json(with_added(added + "]"), "t.json");
  std::string text;
  while (text.size() < 200000) text += "the e_tok_19999 of every eel, e_tok_7e_tok_ ";
  const std::vector<int64_t> ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(std::vector<int64_t>(ids.begin() + 4, ids.begin() + 5), std::vector<int64_t>{258 + 19999});
  const std::vector<int64_t> first = tok.encode("e_tok_7e_tok_ ");  // e_tok_7, not e_tok_7e..., then e_tok_
  EXPECT_EQ(first.front(), 258 + 7);
}

TEST(HfTokenizer, IdsWithGapsTakeMemoryByTheTokensNotTheLargestId) {
  // an added token at 2^31 - 1: accepted as the library accepts it, held in a few bytes, and the
  // ids a model must cover are up to it
  const auto tok = tokenizers::HfTokenizer::from_json(with_added(R"([{"id":2147483647,"content":"<|far|>"}])"), "t.json");
  EXPECT_EQ(tok.vocab_size(), int64_t{1} << 31);
  EXPECT_EQ(tok.encode("ab<|far|>"), (std::vector<int64_t>{256, 2147483647}));
  EXPECT_EQ(tok.decode({2147483647, 257}), "<|far|>abc");
  EXPECT_EQ(tok.token_bytes(1000000), "");
  test::expect_error([&] { tok.decode({1000000}); }, {"t.json: id 1000000 is no token of this tokenizer (ids in [0, 2147483648))"});
}

TEST(HfTokenizer, AddedTokensThatAreNotAListAreAnErrorNamingTheField) {
  test::expect_error([] { tokenizers::HfTokenizer::from_json(with_added(R"({"<|im_end|>":258})"), "t.json"); },
                     {"t.json: \"added_tokens\" is an object: expected a list [{\"id\": ..., \"content\": \"...\"}, ...]"});
}

TEST(HfTokenizer, TheChatTemplateIsReadAsAStringAListOrAJinjaFile) {
  test::TempFolder dir;
  test::write_bytes(dir.file("tokenizer.json"), small_json());
  auto config = [&](const std::string& chat) {
    test::write_bytes(dir.file("tokenizer_config.json"), R"({"eos_token":"<|x|>","chat_template":)" + chat + "}");
  };
  config(R"("one")");
  EXPECT_EQ(tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json")).chat_template(), "one");
  config(R"([{"name":"tool_use","template":"tools"},{"name":"default","template":"plain"}])");
  EXPECT_EQ(tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json")).chat_template(), "plain");
  config(R"([{"name":"tool_use","template":"tools"}])");
  test::expect_error([&] { tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json")); },
                     {"tokenizer_config.json: \"chat_template\" lists no \"default\" template (\"tool_use\")"});
  config(R"([{"name":"default"}])");
  test::expect_error([&] { tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json")); },
                     {"tokenizer_config.json: \"chat_template\"[0]: expected {\"name\": \"...\", \"template\": \"...\"}"});
  config("7");
  test::expect_error([&] { tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json")); },
                     {"tokenizer_config.json: \"chat_template\" is a number: expected a string or a list"});
  // chat_template.jinja takes the config's place, as in transformers, and a saved tokenizer keeps it
  config(R"("one")");
  test::write_bytes(dir.file("chat_template.jinja"), "{{ jinja }}");
  const tokenizers::HfTokenizer tok = tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json"));
  EXPECT_EQ(tok.chat_template(), "{{ jinja }}");
  test::TempFolder saved;
  tokenizers::Tokenizer(tok).save(saved.path);
  EXPECT_EQ(test::read_bytes(saved.file("chat_template.jinja")), "{{ jinja }}");
  EXPECT_EQ(tokenizers::load_tokenizer(saved.path).hf()->chat_template(), "{{ jinja }}");
  // a chat_template.jinja that is no file is named for what it is, not skipped
  std::filesystem::remove(dir.file("chat_template.jinja"));
  std::filesystem::create_directory(dir.file("chat_template.jinja"));
  test::expect_error([&] { tokenizers::HfTokenizer::from_file(dir.file("tokenizer.json")); },
                     {"chat_template.jinja: is a folder, not a file"});
}

}  // namespace
}  // namespace tg
