// GPTConfig::tie_weights (train_gpt --tie-weights): out_head.weight is tok_emb.weight, as in
// GPT-2. One tensor: counted once in the parameters and by the optimizer, listed under both
// names in the state_dict and the file (as PyTorch does), still one tensor after training
// steps; loading checks that the two values given for it agree. (Against PyTorch: the
// tie_weights run of tests/train/test_train_parity.cpp.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "models/gpt.h"
#include "nn/serialize.h"
#include "optim/adam.h"
#include "test_util.h"

namespace tg::nn {
namespace {

models::GPTConfig config(bool tied) {
  return {.vocab_size = 11, .context_length = 8, .emb_dim = 12, .n_heads = 3, .n_layers = 1, .tie_weights = tied};
}

const Tensor& find(const NamedTensors& named, const std::string& name) {
  for (const auto& [n, t] : named)
    if (n == name) return t;
  throw Error("no " + name);
}

TEST(TiedWeights, OneTensorUnderTwoNames) {
  models::GPTModel untied(config(false)), tied(config(true));
  EXPECT_EQ(tied.num_parameters(), untied.num_parameters() - 11 * 12);
  EXPECT_EQ(tied.out_head->weight.raw_data(), tied.tok_emb->weight.raw_data());
  const NamedTensors state = tied.state_dict();
  EXPECT_EQ(find(state, "out_head.weight").raw_data(), find(state, "tok_emb.weight").raw_data());
  for (const auto& [name, t] : tied.named_parameters()) EXPECT_NE(name, "out_head.weight");
}

TEST(TiedWeights, StayOneTensorWhileTraining) {
  manual_seed(3);
  models::GPTModel model(config(true));
  optim::AdamW opt(model.parameters());
  const Tensor idx = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}, {1, 8});
  const Tensor target = from_vector(std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8, 9}, {8});
  const Tensor before = model.tok_emb->weight.detach().clone();
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    cross_entropy(model.forward(idx).flatten(0, 1), target).backward();
    opt.step();
  }
  EXPECT_EQ(model.out_head->weight.raw_data(), model.tok_emb->weight.raw_data());
  EXPECT_FALSE(allclose(model.tok_emb->weight, before, 0, 0)) << "the shared weight trained";
}

TEST(TiedWeights, FileHoldsBothNamesAndLoadingChecksTheyAgree) {
  test::TempFolder dir;
  const std::string path = dir.file("tied.safetensors");
  manual_seed(4);
  models::GPTModel a(config(true));
  save(a, path);
  const NamedTensors file = load_safetensors(path);
  EXPECT_TRUE(allclose(find(file, "out_head.weight"), find(file, "tok_emb.weight"), 0, 0));
  manual_seed(5);
  models::GPTModel b(config(true));
  load(b, path);
  EXPECT_TRUE(allclose(b.tok_emb->weight, a.tok_emb->weight, 0, 0));
  EXPECT_EQ(b.out_head->weight.raw_data(), b.tok_emb->weight.raw_data());

  NamedTensors changed = a.state_dict();
  for (auto& [n, t] : changed)
    if (n == "out_head.weight") t = t.detach().clone() + 1.0;
  const Tensor kept = b.tok_emb->weight.detach().clone();
  test::expect_error([&] { b.load_state_dict(changed); },
                     {"'tok_emb.weight' and 'out_head.weight' are one tied tensor, but the values given for them differ",
                      "nothing was changed"});
  EXPECT_TRUE(allclose(b.tok_emb->weight, kept, 0, 0));
}

}  // namespace
}  // namespace tg::nn
