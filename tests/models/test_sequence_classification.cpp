// models/sequence_classification.h: the classifier's logits, loss and gradients are PyTorch's
// (tests/reference/make_sequence_classification_reference.py, Hugging Face's pooling of the last
// token), its gradients pass a float64 gradcheck on a GPT and a Qwen3 body, and padding that is not
// on the right is refused.
#include "models/sequence_classification.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "autograd/error.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "models/gpt.h"
#include "models/hf/hf_gpt2.h"
#include "models/llama.h"
#include "nn/gradcheck.h"
#include "padded_vocabulary.h"
#include "test_util.h"

namespace tg::test {
namespace {

const std::string kReference = std::string(TG_REFERENCE_DIR);

Tensor named(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, t] : tensors)
    if (key == name) return t;
  throw Error("sequence_classification.safetensors has no " + name);
}

TEST(SequenceClassification, LogitsLossAndGradientsArePyTorchs) {
  models::HfGpt2 gpt2 = models::load_hf_gpt2(kReference + "/instruct");
  std::shared_ptr<models::GPTModel> body(std::move(gpt2.model));
  models::ModelForSequenceClassification model(body, gpt2.config.emb_dim, 3);
  model.eval();
  const NamedTensors torch = load_safetensors(kReference + "/sequence_classification.safetensors");
  {
    NoGradGuard no_grad;
    model.score->weight.copy_(named(torch, "score.weight"));
  }
  const Tensor mask = named(torch, "attention_mask") == 0;  // Hugging Face's 1 = token -> true = padding
  const Tensor logits = model.forward(named(torch, "x"), mask);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{3, 3}));
  EXPECT_TRUE(all_close(logits, named(torch, "logits"), 1e-5, 1e-6));
  const Tensor loss = cross_entropy(logits, named(torch, "labels"));
  const double want = named(torch, "loss").item<double>();
  EXPECT_NEAR(loss.item<double>(), want, 1e-6 * want);
  loss.backward();
  EXPECT_TRUE(all_close(model.score->weight.grad(), named(torch, "score_grad"), 1e-5, 1e-6));
  EXPECT_TRUE(all_close(body->tok_emb->weight.grad(), named(torch, "wte_grad"), 1e-5, 1e-6));
  EXPECT_TRUE(all_close(body->final_norm->weight.grad(), named(torch, "ln_f_grad"), 1e-5, 1e-6));
}

TEST(SequenceClassification, GradientsPassAFloat64GradcheckOnAGptAndAQwen3) {
  manual_seed(3);
  auto gpt = std::make_shared<models::GPTModel>(
      models::GPTConfig{.vocab_size = 11, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  auto qwen3 = std::make_shared<models::LlamaForCausalLM>(tiny_qwen3_config(11, 6, 1));
  const Tensor idx = from_vector(std::vector<int64_t>{1, 4, 2, 7, 3, 9, 5, 0, 0, 0}, {2, 5});
  const Tensor mask = from_vector(std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 1, 1, 1}, {2, 5}) == 1;
  const Tensor labels = from_vector(std::vector<int64_t>{2, 0}, {2});
  for (const std::shared_ptr<models::CausalLM>& body : {std::shared_ptr<models::CausalLM>(gpt),
                                                        std::shared_ptr<models::CausalLM>(qwen3)}) {
    models::ModelForSequenceClassification model(body, 8, 3);
    model.eval();
    const GradcheckResult r = nn::gradcheck(model, {}, [&](const std::vector<Tensor>&) {
      return cross_entropy(model.forward(idx, mask), labels);
    });
    EXPECT_TRUE(r.passed) << r;
    // the row padded at 2 reads position 1: what follows it does not change its logits
    const Tensor shorter = model.forward(idx.narrow(0, 1, 1).narrow(1, 0, 2));
    EXPECT_TRUE(all_close(model.forward(idx, mask).narrow(0, 1, 1), shorter, 1e-5, 1e-6));
  }
}

TEST(SequenceClassification, PaddingMustBeOnTheRight) {
  manual_seed(3);
  auto gpt = std::make_shared<models::GPTModel>(
      models::GPTConfig{.vocab_size = 11, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  models::ModelForSequenceClassification model(gpt, 8, 2);
  const Tensor idx = from_vector(std::vector<int64_t>{1, 4, 2, 7}, {2, 2});
  auto error_of = [&](std::vector<int64_t> padded) {
    try {
      model.forward(idx, from_vector(padded, {2, 2}) == 1);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({0, 0, 1, 0}), "sequence classification: row 1 has a token at position 1 after padding: pad on the right");
  EXPECT_EQ(error_of({0, 1, 1, 1}), "sequence classification: row 1 is all padding");
  EXPECT_TRUE(has_part([&] {
    try {
      models::ModelForSequenceClassification one(gpt, 8, 1);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }(), "1 labels: a classifier needs 2 or more"));
}

}  // namespace
}  // namespace tg::test
