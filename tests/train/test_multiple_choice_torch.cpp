// The choices' log-likelihoods of train/multiple_choice.h against the PyTorch twin's
// (examples/pytorch/evaluate.py, which runs each context + continuation whole, as
// lm-evaluation-harness does): tests/reference/multiple_choice_torch.json, made by
// make_multiple_choice_reference.py, on the book's GPT from a seed and the committed GPT-2, Llama
// and Qwen3 folders. Both of tapegrad's ways (the context once with its KV cache, and each pair
// whole) must equal the twin within 1e-5 relative; the last item of each model is longer than its
// context, so the harness's cut of the context's left is in it too.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/random/generator.h"
#include "models/gpt.h"
#include "models/hf/hf_gpt2.h"
#include "models/hf/hf_llama.h"
#include "train/multiple_choice.h"

namespace tg {
namespace {

const std::string kReference = TG_REFERENCE_DIR;

std::vector<int64_t> ids_of(const json::Value& list) {
  std::vector<int64_t> out;
  for (const json::Value& v : list.as_array()) out.push_back(v.as_int64());
  return out;
}

std::unique_ptr<models::CausalLM> model_named(const std::string& name, const json::Value& gpt_config) {
  if (name == "gpt") {
    models::GPTConfig config{.vocab_size = gpt_config["vocab_size"].as_int64(),
                             .context_length = gpt_config["context_length"].as_int64(),
                             .emb_dim = gpt_config["emb_dim"].as_int64(),
                             .n_heads = gpt_config["n_heads"].as_int64(),
                             .n_layers = gpt_config["n_layers"].as_int64()};
    manual_seed(11);
    auto model = std::make_unique<models::GPTModel>(config);
    model->eval();
    return model;
  }
  if (name == "hf_gpt2/f32") return std::move(models::load_hf_gpt2(kReference + "/" + name).model);
  return std::move(models::load_hf_llama(kReference + "/" + name).model);
}

TEST(MultipleChoiceTorch, LogLikelihoodsEqualTheTwinsOnGptGpt2LlamaAndQwen3) {
  const json::Value doc = json::parse_file(kReference + "/multiple_choice_torch.json");
  double worst = 0;
  for (const json::Member& m : doc["models"].as_object()) {
    SCOPED_TRACE(m.key);
    std::unique_ptr<models::CausalLM> model = model_named(m.key, doc["gpt_config"]);
    for (const json::Value& item : m.value.as_array()) {
      train::ChoiceRequests requests{ids_of(item["context"]), {}};
      for (const json::Value& c : item["continuations"].as_array()) requests.continuations.push_back(ids_of(c));
      const std::vector<double> fast = train::choice_loglikelihoods(*model, requests);
      const std::vector<double> whole = train::choice_loglikelihoods_whole(*model, requests);
      for (size_t i = 0; i < fast.size(); ++i) {
        const double want = item["loglikelihoods"][i].as_double();
        for (const double got : {fast[i], whole[i]}) {
          const double rel = std::abs(got - want) / std::abs(want);
          worst = std::max(worst, rel);
          EXPECT_LE(rel, 1e-5) << "context of " << requests.context.size() << " ids, choice " << i << ": " << got
                               << " vs the twin's " << want;
        }
      }
    }
  }
  std::printf("largest relative difference from the twin: %.3g\n", worst);
}

}  // namespace
}  // namespace tg
