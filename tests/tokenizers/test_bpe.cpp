// Byte-level BPE (tokenizers/bpe.h) against tests/reference/bpe_reference.json, which
// tests/reference/make_bpe_reference.py made with Python's re.findall and the Python twin
// (examples/pytorch/bpe.py): the pre-split on generated inputs, the merges trained on a
// generated text at three vocab sizes (one stopping early), and the ids of a second text. Then
// the lossless round trip on random bytes, the file, and bad tokenizer files.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "io/json.h"
#include "tokenizers/bpe.h"
#include "test_util.h"

#ifndef TG_REFERENCE_DIR
#error "TG_REFERENCE_DIR must be defined by the build"
#endif

namespace tg {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

const json::Value& reference() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/bpe_reference.json");
  return doc;
}

std::vector<tokenizers::BpeTokenizer::Merge> merges_of(const json::Value& list) {
  std::vector<tokenizers::BpeTokenizer::Merge> merges;
  for (const json::Value& m : list.as_array()) {
    merges.push_back({static_cast<int32_t>(m[0].as_int64()), static_cast<int32_t>(m[1].as_int64())});
  }
  return merges;
}

std::string show(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    char hex[8];
    std::snprintf(hex, sizeof hex, c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
    out += hex;
  }
  return out;
}

TEST(Bpe, SplitsAsPythonsRegexDoes) {
  const json::Value& cases = reference()["split_cases"];
  ASSERT_GT(cases.size(), 100u);
  for (const json::Value& c : cases.as_array()) {
    const std::string input = from_hex(c["input"].as_string());
    std::vector<std::string> want;
    for (const json::Value& chunk : c["chunks"].as_array()) want.push_back(from_hex(chunk.as_string()));
    std::vector<std::string> got;
    for (std::string_view chunk : tokenizers::byte_split(input)) got.emplace_back(chunk);
    ASSERT_EQ(got, want) << "input '" << show(input) << "'";
  }
}

TEST(Bpe, TrainsThePythonTwinsMerges) {
  const std::string text = from_hex(reference()["training_text"].as_string());
  for (const json::Value& t : reference()["trainings"].as_array()) {
    const int64_t vocab = t["vocab_size"].as_int64();
    const std::vector<tokenizers::BpeTokenizer::Merge> want = merges_of(t["merges"]);
    const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(text, vocab);
    ASSERT_EQ(tok.merges().size(), want.size()) << "vocab " << vocab;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(tok.merges()[i].left, want[i].left) << "vocab " << vocab << ", merge " << i;
      ASSERT_EQ(tok.merges()[i].right, want[i].right) << "vocab " << vocab << ", merge " << i;
    }
    EXPECT_EQ(tok.vocab_size(), 256 + static_cast<int64_t>(want.size()));
  }
}

TEST(Bpe, EncodesAsThePythonTwin) {
  const std::string text = from_hex(reference()["encode_text"].as_string());
  const std::string training = from_hex(reference()["training_text"].as_string());
  for (const json::Value& e : reference()["encodings"].as_array()) {
    const int64_t vocab = e["vocab_size"].as_int64();
    std::vector<int64_t> want;
    for (const json::Value& id : e["ids"].as_array()) want.push_back(id.as_int64());
    const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(training, vocab);
    EXPECT_EQ(tok.encode(text), want) << "vocab " << vocab;
    EXPECT_EQ(tok.encode(text), want) << "vocab " << vocab << ", the second time (from the cache)";
    EXPECT_EQ(tok.decode(want), text);
  }
}

TEST(Bpe, RoundTripIsLosslessForAnyBytes) {
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(from_hex(reference()["training_text"].as_string()), 600);
  std::mt19937 rng(5);
  for (int n = 0; n < 300; ++n) {
    std::string bytes(rng() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? "a e'\n"[rng() % 5] : rng() % 256);
    const std::vector<int64_t> ids = tok.encode(bytes);
    for (int64_t id : ids) ASSERT_TRUE(id >= 0 && id < tok.vocab_size());
    ASSERT_EQ(tok.decode(ids), bytes) << "'" << show(bytes) << "'";
  }
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(Bpe, StopsWhenNoPairOccursTwice) {
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train("abcabc", 1000);
  // "abcabc" is one chunk: ab (2), then (ab)c (2), then nothing occurs twice
  ASSERT_EQ(tok.merges().size(), 2u);
  EXPECT_EQ(tok.token_bytes(256), "ab");
  EXPECT_EQ(tok.token_bytes(257), "abc");
  EXPECT_EQ(tok.encode("abcabc"), (std::vector<int64_t>{257, 257}));
  EXPECT_EQ(tokenizers::BpeTokenizer::train("a", 300).merges().size(), 0u);
  // a a a -> aa a, left to right without overlap
  const tokenizers::BpeTokenizer aaa = tokenizers::BpeTokenizer::train("aaa aaa", 257);
  EXPECT_EQ(aaa.encode("aaa"), (std::vector<int64_t>{256, 'a'}));
}

TEST(Bpe, SavesAndLoadsItsMerges) {
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(from_hex(reference()["training_text"].as_string()), 400);
  const tokenizers::BpeTokenizer back = tokenizers::BpeTokenizer::from_json(tok.to_json(), "tok.json");
  ASSERT_EQ(back.vocab_size(), tok.vocab_size());
  const std::string text = from_hex(reference()["encode_text"].as_string());
  EXPECT_EQ(back.encode(text), tok.encode(text));
}

TEST(Bpe, BadInputGivesOneClearError) {
  test::expect_error([] { tokenizers::BpeTokenizer::train("abc", 255); }, {"vocab size must be in [256, 65536]", "got 255"});
  test::expect_error([] { tokenizers::BpeTokenizer::train("abc", 65537); }, {"got 65537"});
  test::expect_error([] { tokenizers::BpeTokenizer::from_json("{\"type\": \"bpe\", \"merges\": [[97, 98], [256, 258]]}", "t.json"); },
                     {"t.json: merge 1 = [256, 258] refers to an id not yet defined (ids so far: 0..256)"});
  test::expect_error([] { tokenizers::BpeTokenizer::from_json("{\"type\": \"char\", \"merges\": []}", "t.json"); },
                     {"t.json: \"type\" is not \"bpe\""});
  test::expect_error([] { tokenizers::BpeTokenizer::from_json("[1, 2]", "t.json"); }, {"t.json: expected a BPE tokenizer"});
  test::expect_error([] { tokenizers::BpeTokenizer::from_json("{\"type\": \"bpe\", \"merges\": [[1]]}", "t.json"); },
                     {"t.json: merge 0 is not a [left, right] pair of ids"});
  test::expect_error(
      [] { tokenizers::BpeTokenizer::from_json("{\"type\": \"bpe\", \"pattern\": \"gpt4\", \"merges\": []}", "t.json"); },
      {"t.json: unknown pre-split pattern"});
  test::expect_error(
      [] { tokenizers::BpeTokenizer::from_json("{\"type\": \"bpe\", \"vocab_size\": 300, \"merges\": [[1, 2]]}", "t.json"); },
      {"t.json: \"vocab_size\" is 300 but the merges make 257 tokens"});
  test::expect_error([] { tokenizers::BpeTokenizer::from_json("{\"type\": \"bpe\", \"merges\": [[1, 2], [1, 2]]}", "t.json"); },
                     {"merge 1 = [1, 2] repeats an earlier merge"});
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train("abab", 300);
  test::expect_error([&] { tok.decode({300}); }, {"id 300 is outside the vocabulary [0, 257)"});
}

TEST(Bpe, HeapMergeGivesThePlainMergesIds) {
  // chunk_ids merges with a heap; merge_chunk_plain is step 3 as written, the oracle. Long
  // pieces of text (not pre-split chunks) with repeats, so that merges overlap and stale heap
  // entries come up.
  const std::string text = from_hex(reference()["training_text"].as_string());
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(text, 1024);
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    const size_t length = 1 + rng() % 200, start = rng() % (text.size() - length);
    std::string piece = text.substr(start, length);
    if (round % 3 == 0) piece = std::string(1 + rng() % 30, piece[0]) + piece;  // "aaaa...": overlapping pairs
    const std::span<const int32_t> fast = tok.chunk_ids(piece);
    ASSERT_EQ(std::vector<int32_t>(fast.begin(), fast.end()), tok.merge_chunk_plain(piece)) << "piece '" << show(piece) << "'";
  }
}

TEST(Bpe, CachedChunksKeepTheirIdsAsTheCacheGrows) {
  const tokenizers::BpeTokenizer tok = tokenizers::BpeTokenizer::train(from_hex(reference()["training_text"].as_string()), 600);
  std::string text;  // about 6000 distinct chunks: the cache grows several times
  for (int i = 0; i < 3000; ++i) text += " w" + std::to_string(i * 7919 % 10007) + "x " + std::to_string(i) + ",";
  const std::vector<int64_t> first = tok.encode(text);
  EXPECT_EQ(tok.encode(text), first);
  EXPECT_EQ(tok.decode(first), text);
  for (std::string_view chunk : tokenizers::byte_split(text)) {
    const std::span<const int32_t> cached = tok.chunk_ids(chunk);
    ASSERT_EQ(std::vector<int32_t>(cached.begin(), cached.end()), tok.merge_chunk_plain(chunk)) << chunk;
  }
}

}  // namespace
}  // namespace tg
