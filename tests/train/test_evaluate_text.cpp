// evaluate_text (train_gpt --eval-only): every id but the first is a target exactly once, in
// windows of the context length cut one after another (the last one shorter), run in batches;
// the loss is their mean, the bpb their sum / ln 2 / their bytes. Checked against the windows
// run one at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "models/gpt.h"
#include "train/evaluate.h"

namespace tg {
namespace {

TEST(EvaluateText, EveryTargetCountsOnceWhateverTheBatch) {
  const std::string text = "caf\xc3\xa9 and t\xc3\xa9 at the caf\xc3\xa9";  // 17 characters, some of 2 bytes
  const tokenizers::Tokenizer tok = tokenizers::CharTokenizer::from_text(text);
  manual_seed(6);
  models::GPTModel model({.vocab_size = tok.vocab_size(), .context_length = 4, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  model.eval();
  const std::vector<int64_t> ids = tok.encode(text);
  const int64_t n = static_cast<int64_t>(ids.size());
  // the windows one at a time: [0, 4], [4, 8], ..., the last from 16 to n - 1
  double nats = 0;
  int64_t bytes = 0;
  {
    NoGradGuard no_grad;
    for (int64_t s = 0; s + 1 < n; s += 4) {
      const int64_t len = std::min<int64_t>(4, n - 1 - s);
      const std::vector<int64_t> x(ids.begin() + s, ids.begin() + s + len),
          y(ids.begin() + s + 1, ids.begin() + s + len + 1);
      nats += cross_entropy(model.forward(from_vector(x, {1, len})).flatten(0, 1), from_vector(y, {len}), "sum")
                  .item<double>();
      for (int64_t id : y) bytes += static_cast<int64_t>(tok.decode({id}).size());
    }
  }
  for (int64_t batch : {1, 2, 3, 100}) {
    const train::TextEval e = train::evaluate_text(model, tok, ids, batch);
    EXPECT_EQ(e.tokens, n - 1) << "batch " << batch;
    EXPECT_EQ(e.bytes, bytes) << "batch " << batch;
    EXPECT_NEAR(e.loss, nats / static_cast<double>(n - 1), 1e-6) << "batch " << batch;
    EXPECT_NEAR(e.perplexity, std::exp(e.loss), 1e-9 * e.perplexity);
    EXPECT_NEAR(e.bpb, nats / std::log(2.0) / static_cast<double>(bytes), 1e-6) << "batch " << batch;
  }
  EXPECT_THROW(train::evaluate_text(model, tok, {ids[0]}, 4), Error);
}

}  // namespace
}  // namespace tg
