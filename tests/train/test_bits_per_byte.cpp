// Bits per byte: an evaluation's loss per byte of the text its targets stand for, in bits, so
// that character and BPE runs compare on one scale. Each token's byte count is checked against
// decoding it alone; an ASCII character run's bpb is its loss / ln 2 exactly; a BPE run's lies
// between loss / ln 2 / (its longest token) and loss / ln 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "train/corpus.h"
#include "train/trainer.h"

namespace tg {
namespace {

train::TrainOptions tiny(const std::string& tokenizer) {
  train::TrainOptions o;
  o.tokenizer = tokenizer;
  o.vocab_size = 400;
  o.batch = 4;
  o.model.context_length = 16;
  o.model.emb_dim = 16;
  o.model.n_heads = 2;
  o.model.n_layers = 1;
  o.steps = 10;
  o.warmup = 2;
  o.eval_batches = 3;
  return o;
}

TEST(BitsPerByte, EachTokensBytesAreWhatItDecodesTo) {
  const std::string text = train::builtin_corpus(20000, 5) + " caf\xc3\xa9 \xe6\x9d\xb1 \xf0\x9f\x98\x80";
  for (const char* kind : {"char", "bpe"}) {
    train::Trainer t(tiny(kind), text);
    const std::vector<int64_t> bytes = t.tokenizer().bytes_per_id();
    ASSERT_EQ(static_cast<int64_t>(bytes.size()), t.tokenizer().vocab_size());
    for (int64_t id = 0; id < t.tokenizer().vocab_size(); ++id) {
      ASSERT_EQ(bytes[static_cast<size_t>(id)], static_cast<int64_t>(t.tokenizer().decode({id}).size()))
          << kind << " id " << id;
    }
  }
}

TEST(BitsPerByte, AsciiCharactersGiveTheLossInBits) {
  train::Trainer t(tiny("char"), train::builtin_corpus(20000, 5));
  for (int i = 0; i < 5; ++i) t.train_step();
  const train::Trainer::Losses e = t.evaluate();
  EXPECT_NEAR(e.val_bpb, e.val / std::log(2.0), 1e-12 * e.val);
  EXPECT_NEAR(e.train_bpb, e.train / std::log(2.0), 1e-12 * e.train);
}

TEST(BitsPerByte, BpeTokensShareTheirLossAmongTheirBytes) {
  train::Trainer t(tiny("bpe"), train::builtin_corpus(20000, 5));
  for (int i = 0; i < 5; ++i) t.train_step();
  const train::Trainer::Losses e = t.evaluate();
  const std::vector<int64_t> bytes = t.tokenizer().bytes_per_id();
  const double longest = static_cast<double>(*std::max_element(bytes.begin(), bytes.end()));
  EXPECT_LT(e.val_bpb, e.val / std::log(2.0));
  EXPECT_GT(e.val_bpb, e.val / std::log(2.0) / longest);
}

}  // namespace
}  // namespace tg
