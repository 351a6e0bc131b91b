// LoRA (nn/lora.h), LoRA on a GPTModel (models/lora/gpt_lora.h) and on a Llama (models/lora/llama_lora.h): A drawn as peft draws it (against
// tests/reference/lora/lora_torch.json, make_lora_reference.py), a LoRALinear that starts as its
// base layer and whose gradients check in float64, the attention's fused q, k, v adapter checked
// too, only the adapters trainable, the same numbers in both kernel modes, and the merged model's
// logits those of the adapted one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/fast_kernels.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/random/generator.h"
#include "autograd/tape.h"
#include "models/lora/llama_lora.h"
#include "nn/nn.h"
#include "models/lora/gpt_lora.h"
#include "models/gpt.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::all_close;
using test::error_of;
using test::has_part;
using test::same_bytes;

// Draws B as random numbers (it starts at zero, which would hide A's gradient).
void randomize_b(LoRA& lora, uint32_t seed) {
  NoGradGuard no_grad;
  lora.lora_B->weight.copy_(test::normal_tensor(lora.lora_B->weight.sizes(), seed, kFloat32));
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) out.push_back(name);
  return out;
}

TEST(ModuleReplace, PutsTheNewModuleInTheOldOnesNameAndPlace) {
  Sequential seq({std::make_shared<Linear>(3, 4), std::make_shared<ReLU>(), std::make_shared<Linear>(4, 2)});
  const auto replacement = seq.replace_module("2", std::make_shared<Linear>(4, 5, false));
  EXPECT_EQ(seq[2], replacement);
  EXPECT_EQ(names_of(seq.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "2.weight"}));
  EXPECT_EQ(seq.forward(zeros({1, 3})).sizes(), (Shape{1, 5}));
  EXPECT_TRUE(has_part(error_of([&] { seq.replace_module("3", std::make_shared<ReLU>()); }),
                       "Sequential: replace_module: no submodule \"3\""));
  EXPECT_TRUE(has_part(error_of([&] { seq.replace_module("1", std::shared_ptr<Module>()); }), "the new module is null"));
}

TEST(LoRA, DrawsItsAAsPeftDoesAndStartsBAtZero) {
  const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/lora/lora_torch.json");
  const json::Value& want = doc["lora_linear"];
  manual_seed(static_cast<uint64_t>(want["seed"].as_int64()));
  LoRA lora(want["in"].as_int64(), want["out"].as_int64(), want["r"].as_int64(), 6.0);
  EXPECT_TRUE(same_bytes(lora.lora_A->weight, test::decode_reference(want["A"])));
  EXPECT_TRUE(same_bytes(lora.lora_B->weight, zeros({7, 3})));
  EXPECT_EQ(lora.scaling, 2.0);
  EXPECT_EQ(lora.repr(),
            "LoRA(\n  r=3, alpha=6.0, scaling=2.0\n  (lora_A): Linear(in_features=5, out_features=3, bias=False)\n"
            "  (lora_B): Linear(in_features=3, out_features=7, bias=False)\n)");
}

TEST(LoRALinear, StartsAsItsBaseLayerOnTheSameFrozenTensors) {
  manual_seed(3);
  Linear base(6, 4);
  const Tensor x = test::normal_tensor({2, 5, 6}, 1, kFloat32);
  const Tensor before = base.forward(x).detach();
  LoRALinear adapted(base, 2, 4.0);
  EXPECT_EQ(adapted.weight.raw_data(), base.weight.raw_data());  // the base's storage, not a copy
  EXPECT_EQ(adapted.bias.raw_data(), base.bias.raw_data());
  EXPECT_FALSE(adapted.weight.requires_grad());
  EXPECT_FALSE(adapted.bias.requires_grad());
  EXPECT_TRUE(same_bytes(adapted.forward(x), before));  // B = 0: the update is exactly zero
  EXPECT_EQ(names_of(adapted.named_parameters()),
            (std::vector<std::string>{"weight", "bias", "lora.lora_A.weight", "lora.lora_B.weight"}));
  EXPECT_EQ(names_of(trainable_parameters(adapted)),
            (std::vector<std::string>{"lora.lora_A.weight", "lora.lora_B.weight"}));
}

TEST(LoRALinear, GradcheckInFloat64AndNoGradientForTheFrozenWeight) {
  manual_seed(4);
  Linear base(5, 3);
  LoRALinear adapted(base, 2, 3.0);
  randomize_b(*adapted.lora, 2);
  const Tensor x = test::normal_tensor({4, 5}, 3).requires_grad_();
  const GradcheckResult r = gradcheck(adapted, {x});
  EXPECT_TRUE(r.passed) << r;
  std::vector<std::string> checked;
  for (const InputCheck& c : r.runs[0].inputs) checked.push_back(c.name);
  EXPECT_EQ(checked, (std::vector<std::string>{"input 0", "lora.lora_A.weight", "lora.lora_B.weight"}));

  adapted.forward(x.to(kFloat32)).sum().backward();  // float32 again: W and b get no gradient
  EXPECT_FALSE(adapted.weight.grad().defined());
  EXPECT_FALSE(adapted.bias.grad().defined());
  EXPECT_TRUE(adapted.lora->lora_A->weight.grad().defined());
}

TEST(LoRALinear, ItsMergedWeightGivesTheSameOutputs) {
  manual_seed(5);
  Linear base(8, 6);
  LoRALinear adapted(base, 3, 6.0);
  randomize_b(*adapted.lora, 4);
  Linear merged(8, 6);
  {
    NoGradGuard no_grad;
    merged.weight.copy_(adapted.merged_weight());
    merged.bias.copy_(adapted.bias);
  }
  const Tensor x = test::normal_tensor({3, 8}, 5, kFloat32);
  NoGradGuard no_grad;
  EXPECT_TRUE(all_close(merged.forward(x), adapted.forward(x), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(adapted.merged_weight() - adapted.weight,  // W + (alpha / r) B A
                        adapted.lora->lora_B->weight.matmul(adapted.lora->lora_A->weight) * 2.0, 1e-6, 0));
}

TEST(LoRALinear, ABadRankOrAlphaIsAnErrorNamingIt) {
  Linear base(4, 4);
  EXPECT_TRUE(has_part(error_of([&] { LoRALinear(base, 0, 8.0); }), "LoRA: the rank r must be at least 1, got 0"));
  EXPECT_TRUE(has_part(error_of([&] { LoRALinear(base, -2, 8.0); }), "got -2"));
  EXPECT_TRUE(has_part(error_of([&] { LoRALinear(base, 2, 0.0); }), "LoRA: alpha must be positive, got 0.0"));
  // a finite double whose scale is no float32: every product and merge would be inf
  EXPECT_TRUE(has_part(error_of([&] { LoRALinear(base, 1, 1e308); }),
                       "LoRA: the scale alpha / r = 1e+308 is beyond float32's range"));
  EXPECT_TRUE(lora_scale_fits_float32(2, 6e38));  // 3e38: the scale fits
  EXPECT_FALSE(lora_scale_fits_float32(1, 6e38));
  EXPECT_TRUE(base.weight.requires_grad());  // nothing was frozen
}

TEST(MultiHeadAttentionLoRA, TheFusedQkvAdapterChecksInFloat64) {
  manual_seed(6);
  models::CausalSelfAttention att(
      models::GPTConfig{.vocab_size = 1, .context_length = 5, .emb_dim = 6, .n_heads = 2, .qkv_bias = true});
  att.add_qkv_lora(2, 4.0);
  randomize_b(*att.qkv_lora, 7);
  EXPECT_EQ(att.qkv_lora->lora_B->weight.sizes(), (Shape{18, 2}));  // 3 C rows: [q | k | v]
  EXPECT_FALSE(att.W_key->weight.requires_grad());
  EXPECT_TRUE(att.out_proj->weight.requires_grad());  // apply_lora freezes it (or adapts it)
  const Tensor x = test::normal_tensor({2, 5, 6}, 8).requires_grad_();
  const GradcheckResult r = gradcheck(att, {x});
  EXPECT_TRUE(r.passed) << r;
  Tensor padded = zeros({2, 5}, kBool);  // the padding mask's path too: the second row's last two keys
  padded.narrow(0, 1, 1).narrow(1, 3, 2).fill_(1.0);
  EXPECT_TRUE(gradcheck(att, {x}, [&](const std::vector<Tensor>& in) { return att.forward(in[0], nullptr, padded); })
                  .passed);
}

models::GPTConfig tiny_config() {
  return models::GPTConfig{.vocab_size = 30, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2, .drop_rate = 0.0,
                   .qkv_bias = true, .tie_weights = true};
}

// Every adapter's B drawn at random, so the adapters change the model's outputs.
void randomize_adapters(nn::Module& model) {
  NoGradGuard no_grad;
  uint32_t seed = 20;
  for (auto& [name, p] : model.named_parameters())
    if (name.find("lora_B") != std::string::npos) p.copy_(test::normal_tensor(p.sizes(), seed++, kFloat32) * 0.3);
}

TEST(GptLoRA, OnlyTheAdaptersTrainAndTheyAreWherePeftPutsThem) {
  manual_seed(7);
  models::GPTModel model(tiny_config());
  const int64_t base_count = model.num_parameters();
  models::apply_lora(model, models::LoRAConfig{.r = 2, .alpha = 4.0, .attn = true, .mlp = true});
  EXPECT_TRUE(models::has_lora(model));
  const std::vector<std::string> block0 = {
      "trf_blocks.0.att.out_proj.lora.lora_A.weight", "trf_blocks.0.att.out_proj.lora.lora_B.weight",
      "trf_blocks.0.att.qkv_lora.lora_A.weight",      "trf_blocks.0.att.qkv_lora.lora_B.weight",
      "trf_blocks.0.ff.layers.0.lora.lora_A.weight",  "trf_blocks.0.ff.layers.0.lora.lora_B.weight",
      "trf_blocks.0.ff.layers.2.lora.lora_A.weight",  "trf_blocks.0.ff.layers.2.lora.lora_B.weight"};
  const std::vector<std::string> trained = names_of(trainable_parameters(model));
  ASSERT_EQ(trained.size(), 16u);
  EXPECT_EQ(std::vector<std::string>(trained.begin(), trained.begin() + 8), block0);
  // r (in + out) each: c_attn 2 (8 + 24), c_proj 2 (8 + 8), c_fc 2 (8 + 32), mlp c_proj 2 (32 + 8): 256 a block
  EXPECT_EQ(model.num_parameters(), base_count + 2 * 256);
  EXPECT_TRUE(has_part(error_of([&] { apply_lora(model, models::LoRAConfig{}); }), "has LoRA adapters already"));

  models::GPTModel attn_only(tiny_config());
  models::apply_lora(attn_only, models::LoRAConfig{.r = 1, .alpha = 1.0, .attn = true, .mlp = false});
  EXPECT_EQ(trainable_parameters(attn_only).size(), 8u);
  EXPECT_FALSE(dynamic_cast<LoRALinear*>((*attn_only.blocks()[0]->ff->layers)[0].get()));
}

TEST(GptLoRA, TheTargetsParseOrNameWhatIsWrong) {
  models::LoRAConfig c;
  models::parse_lora_targets("mlp,attn", c);
  EXPECT_TRUE(c.attn && c.mlp);
  EXPECT_EQ(models::lora_targets(c), "attn,mlp");
  parse_lora_targets("mlp", c);
  EXPECT_EQ(models::lora_targets(c), "mlp");
  EXPECT_TRUE(has_part(error_of([&] { parse_lora_targets("attn,ffn", c); }), "unknown LoRA target \"ffn\""));
  EXPECT_TRUE(has_part(error_of([&] { parse_lora_targets("", c); }), "no LoRA target"));
}

TEST(GptLoRA, FeedForwardAndAttentionWithAdaptersGiveTheSameNumbersInBothKernelModes) {
  manual_seed(8);
  models::GPTModel model(tiny_config());
  models::apply_lora(model, models::LoRAConfig{.r = 2, .alpha = 4.0, .attn = true, .mlp = true});
  randomize_adapters(model);
  model.eval();
  const Tensor idx = from_vector(std::vector<int64_t>{1, 5, 9, 2, 7, 3, 0, 4, 8, 6, 29, 11}, {2, 6});
  std::vector<Tensor> logits, grads;
  for (bool fast : {true, false}) {
    FastKernelsGuard mode(fast);
    model.zero_grad();
    const Tensor out = model.forward(idx);
    out.pow(2.0).mean().backward();
    logits.push_back(out.detach());
    grads.push_back(dynamic_cast<LoRALinear&>(*(*model.blocks()[0]->ff->layers)[0]).lora->lora_A->weight.grad());
  }
  EXPECT_TRUE(all_close(logits[0], logits[1], 1e-6, 1e-5));
  EXPECT_TRUE(all_close(grads[0], grads[1], 1e-6, 1e-5));
}

// Bytes a training forward keeps for backward (idx (2, 8) through the whole model).
size_t forward_saved_bytes(models::GPTModel& model) {
  const Tensor idx = from_vector(std::vector<int64_t>{1, 5, 9, 2, 7, 3, 0, 4, 8, 6, 29, 11, 13, 2, 5, 7}, {2, 8});
  const Tensor logits = model.forward(idx);
  const size_t bytes = saved_bytes(tape_entries());
  logits.sum().backward();
  return bytes;
}

TEST(GptLoRA, CheckpointingKeepsOnlyTheBlocksInputsTheFirstOneIncluded) {
  // the embeddings are frozen, so the first block's input would need no gradient: GPTModel makes
  // it require one, else that block would run unchecked and keep everything
  std::vector<size_t> full, adapted;
  for (models::Checkpointing mode : {models::Checkpointing::none, models::Checkpointing::every}) {
    manual_seed(10);
    models::GPTModel plain(tiny_config()), model(tiny_config());
    models::apply_lora(model, models::LoRAConfig{.r = 2, .alpha = 4.0, .attn = true, .mlp = true});
    plain.set_checkpointing(mode);
    model.set_checkpointing(mode);
    full.push_back(forward_saved_bytes(plain));
    adapted.push_back(forward_saved_bytes(model));
  }
  EXPECT_LE(adapted[1], full[1]);  // the blocks' inputs, the head's: the same (the embeddings keep no ids)
  EXPECT_LE(2 * adapted[1], adapted[0]);
}

TEST(GptLoRA, TheMergedModelGivesTheSameLogits) {
  manual_seed(9);
  models::GPTModel model(tiny_config());
  model.eval();
  const Tensor idx = from_vector(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
  const Tensor base_logits = model.forward(idx).detach();
  models::apply_lora(model, models::LoRAConfig{.r = 3, .alpha = 5.0, .attn = true, .mlp = true});
  randomize_adapters(model);
  models::GPTModel merged(tiny_config());
  merged.load_state_dict(models::merged_state_dict(model));  // strict: the plain model's names exactly
  merged.eval();
  NoGradGuard no_grad;
  const Tensor adapted = model.forward(idx), plain = merged.forward(idx);
  EXPECT_TRUE(all_close(plain, adapted, 1e-5, 1e-5));
  EXPECT_FALSE(all_close(adapted, base_logits, 1e-3, 0));  // the adapters did change them
}

// A Qwen2 (biases on q, k, v): the adapters sit on the seven projections, only they train (the
// biases, norms and embeddings are frozen), and the merged plain model gives the adapted logits.
TEST(LlamaLoRA, OnlyTheAdaptersTrainAndTheMergedModelGivesTheSameLogits) {
  models::LlamaConfig config;
  config.model_type = "qwen2";
  config.vocab_size = 40;
  config.hidden_size = 12;
  config.intermediate_size = 20;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 4;
  config.max_position_embeddings = 16;
  config.qkv_bias = true;
  manual_seed(3);
  models::LlamaForCausalLM model(config);
  model.eval();
  const Tensor idx = from_vector(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
  const Tensor base_logits = model.forward(idx).detach();
  const int64_t base_count = model.num_parameters();
  models::apply_lora(model, models::LoRAConfig{.r = 2, .alpha = 3.0, .attn = true, .mlp = true});
  EXPECT_TRUE(models::has_lora(model));
  // per layer: q 2x(12+16), k and v 2x(12+8) each, o 2x(16+12), gate and up 2x(12+20) each, down 2x(20+12)
  EXPECT_EQ(model.num_parameters() - base_count, 2 * (56 + 40 + 40 + 56 + 64 + 64 + 64));
  std::vector<std::string> trained;
  for (const auto& [name, p] : trainable_parameters(model)) trained.push_back(name);
  ASSERT_EQ(trained.size(), 28u);
  EXPECT_EQ(trained[0], "model.layers.0.self_attn.q_proj.lora.lora_A.weight");
  EXPECT_EQ(trained[27], "model.layers.1.mlp.down_proj.lora.lora_B.weight");
  EXPECT_TRUE(has_part(error_of([&] { models::apply_lora(model, models::LoRAConfig{}); }), "has LoRA adapters already"));
  {
    NoGradGuard no_grad;  // B = 0: the adapted model starts as the base
    EXPECT_TRUE(same_bytes(model.forward(idx), base_logits));
  }
  randomize_adapters(model);
  std::unique_ptr<models::LlamaForCausalLM> merged;
  {
    const init::SkipInitGuard no_draws;
    merged = std::make_unique<models::LlamaForCausalLM>(config);
  }
  merged->load_state_dict(models::merged_state_dict(model));  // strict: the plain model's names exactly
  merged->eval();
  NoGradGuard no_grad;
  const Tensor adapted = model.forward(idx), plain = merged->forward(idx);
  EXPECT_TRUE(all_close(plain, adapted, 1e-5, 1e-5));
  EXPECT_FALSE(all_close(adapted, base_logits, 1e-3, 0));  // the adapters did change them
}

}  // namespace
}  // namespace tg::nn
