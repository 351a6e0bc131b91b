// What int8 weights (nn/quantize.h) cost the tests' trained tiny models (tests/reference/runs/: a
// BPE run and a character run, GPT-2's layout at width 16): on the held-out part of the text they
// were trained on (the built-in corpus's val split), bits per byte and perplexity move by less than
// 0.5% from the float32 model's. The weights move by at most half a group's step (ops/quantize.cpp),
// so the logits move little; this is the check that "little" is what a reader of the loss sees.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/saved_model.h"
#include "nn/quantize.h"
#include "train/corpus.h"
#include "train/data.h"
#include "train/evaluate.h"

namespace tg {
namespace {

TEST(Int8Quality, TheTrainedTinyRunsMoveByLessThanHalfAPercent) {
  const std::string corpus = train::builtin_corpus();
  // the val split's first 6,000 bytes (whole characters: the corpus is ASCII)
  const std::string held_out = corpus.substr(static_cast<size_t>(train::train_count(std::ssize(corpus))), 6000);
  for (const char* run : {"bpe_run", "char_run"}) {
    SCOPED_TRACE(run);
    const std::string dir = std::string(TG_REFERENCE_DIR) + "/runs/" + run;
    models::SavedModel saved = models::load_saved_model(dir);
    const tokenizers::Tokenizer& tokenizer = saved.the_tokenizer(dir);
    const std::vector<int64_t> ids = tokenizer.encode(held_out);
    const train::TextEval wide = train::evaluate_text(*saved.model, tokenizer, ids, 8);
    EXPECT_GT(nn::quantize_int8_(*saved.model), 0);
    const train::TextEval small = train::evaluate_text(*saved.model, tokenizer, ids, 8);
    EXPECT_NE(small.loss, wide.loss);  // the weights did change
    EXPECT_LT(std::abs(small.bpb / wide.bpb - 1), 0.005) << small.bpb << " vs " << wide.bpb;
    EXPECT_LT(std::abs(small.perplexity / wide.perplexity - 1), 0.005) << small.perplexity << " vs " << wide.perplexity;
  }
}

}  // namespace
}  // namespace tg
