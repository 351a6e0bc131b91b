// The training program's data side (train/): the built-in corpus, the character
// tokenizer, the 90/10 split and the batches, whose window starts equal PyTorch's for the same
// generator seed (tests/reference/gpt_torch.json, "batches").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/ops.h"
#include "train/corpus.h"
#include "train/data.h"
#include "tokenizers/tokenizer.h"
#include "test_util.h"

namespace tg {
namespace {

using test::expect_error;

TEST(BuiltinCorpus, IsDeterministicPlainTextInParagraphs) {
  const std::string a = train::builtin_corpus(20000, 7), b = train::builtin_corpus(20000, 7), c = train::builtin_corpus(20000, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_GE(a.size(), 20000u);
  EXPECT_LT(a.size(), 21000u);
  EXPECT_EQ(a.substr(a.size() - 2), "\n\n");  // whole paragraphs
  for (char ch : a) EXPECT_TRUE((ch >= 0x20 && ch < 0x7f) || ch == '\n') << int(ch);
  const tokenizers::CharTokenizer t = tokenizers::CharTokenizer::from_text(a);
  EXPECT_GE(t.vocab_size(), 30);  // letters, space, punctuation
  EXPECT_LE(t.vocab_size(), 50);
}

TEST(CharTokenizer, SortedCodePointsRoundTrip) {
  const std::string text = "b\xc3\xa9" "a\xe2\x9c\x93 a";  // "béa✓ a"
  const tokenizers::CharTokenizer t = tokenizers::CharTokenizer::from_text(text);
  EXPECT_TRUE(t.is_utf8());
  EXPECT_EQ(t.vocab_size(), 5);  // ' ' a b é ✓
  EXPECT_EQ(t.encode(text), (std::vector<int64_t>{2, 3, 1, 4, 0, 1}));
  EXPECT_EQ(t.decode(t.encode(text)), text);
  EXPECT_EQ(t.to_json(), "{\"type\": \"char\", \"kind\": \"utf8\", \"symbols\": [32, 97, 98, 233, 10003]}\n");
  const tokenizers::CharTokenizer back = tokenizers::CharTokenizer::from_json(t.to_json(), "tokenizer.json");
  EXPECT_EQ(back.encode(text), t.encode(text));
}

TEST(CharTokenizer, AnyBytesWhenNotUtf8) {
  const std::string text = std::string("ab\xff\x00", 4);
  const tokenizers::CharTokenizer t = tokenizers::CharTokenizer::from_text(text);
  EXPECT_FALSE(t.is_utf8());
  EXPECT_EQ(t.encode(text), (std::vector<int64_t>{1, 2, 3, 0}));
  EXPECT_EQ(t.decode(t.encode(text)), text);
  EXPECT_EQ(tokenizers::CharTokenizer::from_json(t.to_json(), "t.json").decode({3, 0}), std::string("\xff\x00", 2));
}

TEST(CharTokenizer, ErrorsNameTheCharacterAndWhere) {
  const tokenizers::CharTokenizer t = tokenizers::CharTokenizer::from_text("hello world");
  expect_error([&] { t.encode("hello World"); }, {"'W' (U+0057) at byte 6 is not in the vocabulary (8 characters)"});
  expect_error([&] { t.encode("h\xc3\xa9"); }, {"U+00E9", "at byte 1"});
  expect_error([&] { t.encode("h\xff"); }, {"not valid UTF-8"});
  expect_error([&] { t.decode({0, 8}); }, {"id 8 is outside the vocabulary [0, 8)"});
  expect_error([&] { tokenizers::CharTokenizer::from_json("{\"kind\": \"utf8\", \"symbols\": [98, 97]}", "tok.json"); },
               {"tok.json: symbol 1 (97) is out of range or not ascending"});
  expect_error([&] { tokenizers::CharTokenizer::from_json("{\"kind\": \"words\", \"symbols\": [1]}", "tok.json"); },
               {"tok.json", "\"kind\" must be"});
  expect_error([&] { tokenizers::CharTokenizer::from_json("{\"kind\": \"bytes\", \"symbols\": []}", "tok.json"); },
               {"tok.json: the vocabulary is empty"});
  expect_error([&] { tokenizers::CharTokenizer::from_json("[1, 2", "tok.json"); }, {"tok.json"});
}

TEST(TrainingData, NinetyTenSplit) {
  std::vector<int64_t> ids(25);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  const train::Split s = train::split_train_val(ids);
  EXPECT_EQ(s.train.numel(), 22);  // int(0.9 * 25)
  EXPECT_EQ(s.val.numel(), 3);
  EXPECT_EQ(s.val.tolist<int64_t>(), (std::vector<int64_t>{22, 23, 24}));
}

TEST(TrainingData, BatchesStartWherePyTorchsDo) {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/gpt_torch.json");
  const json::Value& runs = doc["batches"];
  ASSERT_EQ(runs.size(), 2u);
  for (size_t r = 0; r < runs.size(); ++r) {
    const json::Value& run = runs[r];
    const int64_t n = run["n"].as_int64(), B = run["batch"].as_int64(), T = run["context"].as_int64();
    const Tensor data = arange(n);  // data[i] = i, so each row starts with its window's start
    Generator gen(static_cast<uint64_t>(run["seed"].as_int64()));
    for (size_t k = 0; k < run["starts"].size(); ++k) {
      const train::Batch batch = train::get_batch(data, B, T, gen, "train");
      ASSERT_EQ(batch.x.sizes(), Shape({B, T}));
      for (int64_t b = 0; b < B; ++b) {
        const int64_t start = run["starts"][k][static_cast<size_t>(b)].as_int64();
        EXPECT_EQ(batch.x.select(0, b).tolist<int64_t>(), arange(start, start + T).tolist<int64_t>());
        EXPECT_EQ(batch.y.select(0, b).tolist<int64_t>(), arange(start + 1, start + T + 1).tolist<int64_t>());
      }
    }
  }
}

TEST(TrainingData, TooShortForOneWindowIsAnError) {
  Generator gen(1);
  expect_error([&] { train::get_batch(arange(10), 2, 9, gen, "val"); },
               {"the val split has 10 tokens, too few for one window of 9 + 2 tokens"});
}

}  // namespace
}  // namespace tg
