// tg::models::GPTModel against PyTorch 1.13 (tests/reference/gpt_torch.json, made by
// make_gpt_reference.py from examples/pytorch/tapegrad_twin/gpt_model.py): from the same seed, the same
// state_dict (names, order, values), printing, logits, loss and every parameter's gradient,
// with and without dropout; and its bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/nn.h"
#include "models/lora/gpt_lora.h"
#include "models/gpt.h"
#include "models/generation/generate.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::all_close;
using test::decode_reference;
using test::expect_error;

const json::Value& gpt_cases() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/gpt_torch.json");
  return doc["cases"];
}

models::GPTConfig config_of(const json::Value& c) {
  models::GPTConfig cfg;
  cfg.vocab_size = c["vocab_size"].as_int64();
  cfg.context_length = c["context_length"].as_int64();
  cfg.emb_dim = c["emb_dim"].as_int64();
  cfg.n_heads = c["n_heads"].as_int64();
  cfg.n_layers = c["n_layers"].as_int64();
  cfg.drop_rate = c["drop_rate"].as_double();
  cfg.qkv_bias = c["qkv_bias"].as_bool();
  return cfg;
}

Tensor token_ids(const json::Value& list, int64_t batch, int64_t num_tokens) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < list.size(); ++i) ids.push_back(list[i].as_int64());
  return from_vector(ids, {batch, num_tokens});
}

TEST(GPTModelVsTorch, SameSeedSameWeightsLogitsLossAndGradients) {
  const json::Value& cases = gpt_cases();
  ASSERT_EQ(cases.size(), 4u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const json::Value& c = cases[i];
    const std::string id = c["id"].as_string();
    manual_seed(static_cast<uint64_t>(c["seed"].as_int64()));
    models::GPTModel model(config_of(c["config"]));
    model.train(c["train"].as_bool());
    EXPECT_EQ(model.repr(), c["repr"].as_string()) << id;
    EXPECT_EQ(model.num_parameters(), c["num_parameters"].as_int64()) << id;

    const NamedTensors sd = model.state_dict();
    ASSERT_EQ(sd.size(), c["state_dict"].size()) << id;
    for (size_t k = 0; k < sd.size(); ++k) {
      EXPECT_EQ(sd[k].first, c["state_dict"][k][0].as_string()) << id;
      EXPECT_TRUE(all_close(sd[k].second, decode_reference(c["state_dict"][k][1]), 0, 0)) << id << " " << sd[k].first;
    }

    const int64_t B = c["batch"].as_int64(), T = c["num_tokens"].as_int64();
    const Tensor x = token_ids(c["x"], B, T), y = token_ids(c["y"], B, T);
    manual_seed(static_cast<uint64_t>(c["ids_seed"].as_int64() + 1));  // what dropout draws
    const Tensor logits = model.forward(x);                                // (B,T,V)
    const Tensor loss = cross_entropy(logits.flatten(0, 1), y.flatten());
    loss.backward();
    EXPECT_TRUE(all_close(logits, decode_reference(c["logits"]), 1e-5, 1e-4)) << id << " logits";
    EXPECT_TRUE(all_close(loss, decode_reference(c["loss"]), 0, 1e-6)) << id << " loss";
    const NamedTensors params = model.named_parameters();
    ASSERT_EQ(params.size(), c["grads"].size()) << id;
    for (size_t k = 0; k < params.size(); ++k) {
      EXPECT_EQ(params[k].first, c["grads"][k][0].as_string()) << id;
      EXPECT_TRUE(all_close(params[k].second.grad(), decode_reference(c["grads"][k][1]), 1e-6, 1e-4))
          << id << " gradient of " << params[k].first;
    }
  }
}

// The same model, prompt, options and generator seed give PyTorch's tokens (greedy, sampling,
// temperature, top-k, top-p), with the window sliding past context_length.
TEST(GenerateVsTorch, SameSeedSameTokens) {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/gpt_torch.json");
  const json::Value& runs = doc["generations"];
  ASSERT_EQ(runs.size(), 5u);
  for (size_t i = 0; i < runs.size(); ++i) {
    const json::Value& r = runs[i];
    const std::string id = r["id"].as_string();
    manual_seed(static_cast<uint64_t>(r["seed"].as_int64()));
    models::GPTModel model(config_of(r["config"]));
    model.eval();
    models::SamplingOptions options;
    const json::Value& o = r["options"];
    if (o.contains("temperature")) options.temperature = o["temperature"].as_double();
    if (o.contains("top_k")) options.top_k = o["top_k"].as_int64();
    if (o.contains("top_p")) options.top_p = o["top_p"].as_double();
    const json::Value& prompt = r["prompt"];
    const int64_t B = static_cast<int64_t>(prompt.size()), T = static_cast<int64_t>(prompt[0].size());
    std::vector<int64_t> ids;
    for (size_t b = 0; b < prompt.size(); ++b)
      for (size_t t = 0; t < prompt[b].size(); ++t) ids.push_back(prompt[b][t].as_int64());
    Generator gen(static_cast<uint64_t>(r["gen_seed"].as_int64()));
    const Tensor out = models::generate(model, from_vector(ids, {B, T}), r["max_new_tokens"].as_int64(), options, &gen);
    std::vector<int64_t> want;
    for (size_t b = 0; b < r["tokens"].size(); ++b)
      for (size_t t = 0; t < r["tokens"][b].size(); ++t) want.push_back(r["tokens"][b][t].as_int64());
    EXPECT_EQ(out.tolist<int64_t>(), want) << id;
  }
}

TEST(Generate, BadOptionsAndPromptsAreErrors) {
  models::GPTModel model(models::GPTConfig{.vocab_size = 5, .context_length = 4, .emb_dim = 4, .n_heads = 2, .n_layers = 1});
  const Tensor prompt = zeros({1, 2}, kInt64);
  expect_error([&] { models::generate(model, prompt, 3, {.temperature = -1.0}); },
               {"temperature must be 0 (greedy) or in [0.0001, 100], got -1.0"});
  // so small that float32 logits / temperature overflow (1e-300 is 0 in float32): refused, not nan
  expect_error([&] { models::generate(model, prompt, 3, {.temperature = 1e-300}); }, {"in [0.0001, 100], got 1e-300"});
  expect_error([&] { models::generate(model, prompt, 3, {.temperature = 1e-5}); }, {"in [0.0001, 100], got 1e-05"});
  expect_error([&] { models::generate(model, prompt, 3, {.top_k = -2}); }, {"top_k must be >= 0", "-2"});
  expect_error([&] { models::generate(model, prompt, 3, {.top_p = 0.0}); }, {"top_p must be in (0, 1], got 0.0"});
  expect_error([&] { models::generate(model, prompt, -1); }, {"max_new_tokens must be >= 0, got -1"});
  expect_error([&] { models::generate(model, zeros({1, 2}), 3); }, {"dtype int64", "float32"});
  expect_error([&] { models::generate(model, zeros({1, 0}, kInt64), 3); }, {"num_tokens >= 1", "(1,0)"});
  expect_error([&] { models::generate(model, prompt, 3, {.keep_when_full = -1}); }, {"keep_when_full must be >= 0", "-1"});
  expect_error([&] { models::generate(model, prompt, 3, {.keep_when_full = 5}); },
               {"keep_when_full (5) exceeds the model's context_length (4)"});
  expect_error([&] { models::sample_next_token(zeros({5})); }, {"(batch, vocab_size)", "(5)"});
}

TEST(Generate, RecordsNothingAndKeepsThePrompt) {
  models::GPTModel model(models::GPTConfig{.vocab_size = 5, .context_length = 4, .emb_dim = 4, .n_heads = 2, .n_layers = 1});
  model.eval();
  const Tensor prompt = from_vector(std::vector<int64_t>{3, 1, 4}, {1, 3});
  const Tensor out = models::generate(model, prompt, 6, {.temperature = 0.0});
  EXPECT_EQ(out.sizes(), Shape({1, 9}));
  EXPECT_TRUE(all_close(out.narrow(1, 0, 3), prompt, 0, 0));
  EXPECT_FALSE(out.requires_grad());
}

// Incremental decoding: the logits of each new position, fed one token at a time through the
// cache, equal the full forward's (to float32 round-off), and the generated tokens are
// identical with and without the cache, also once the window slides past context_length.
TEST(KVCache, IncrementalLogitsEqualTheFullForward) {
  manual_seed(3);
  models::GPTModel model(models::GPTConfig{.vocab_size = 13, .context_length = 10, .emb_dim = 16, .n_heads = 4, .n_layers = 2,
                           .qkv_bias = true});
  model.eval();
  NoGradGuard no_grad;
  const Tensor idx = randint(0, 13, {2, 10});
  const Tensor full = model.forward(idx);  // (2, 10, 13)
  models::GPTCache cache;
  const Tensor prefix = model.forward(idx.narrow(1, 0, 4), cache);  // a prompt of 4, then one at a time
  EXPECT_TRUE(all_close(prefix, full.narrow(1, 0, 4), 1e-6, 1e-5));
  for (int64_t t = 4; t < 10; ++t) {
    const Tensor step = model.forward(idx.narrow(1, t, 1), cache);
    EXPECT_TRUE(all_close(step, full.narrow(1, t, 1), 1e-6, 1e-5)) << "position " << t;
  }
  EXPECT_EQ(cache.length(), 10);
  expect_error([&] { model.forward(idx.narrow(1, 0, 1), cache); },
               {"num_tokens (11, cached ones included) exceeds context_length (10)"});
}

TEST(KVCache, GeneratesTheSameTokensAsRecomputing) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    manual_seed(seed);
    models::GPTModel model(models::GPTConfig{.vocab_size = 11, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2});
    model.eval();
    const Tensor prompt = randint(0, 11, {2, 3});
    for (models::SamplingOptions options : {models::SamplingOptions{.temperature = 0.0}, models::SamplingOptions{.temperature = 1.0},
                                    models::SamplingOptions{.temperature = 0.8, .top_k = 4, .top_p = 0.9}}) {
      Generator g1(seed), g2(seed);
      options.use_kv_cache = true;
      const Tensor cached = models::generate(model, prompt, 20, options, &g1);  // slides past 8 tokens
      options.use_kv_cache = false;
      const Tensor recomputed = generate(model, prompt, 20, options, &g2);
      EXPECT_EQ(cached.tolist<int64_t>(), recomputed.tolist<int64_t>()) << "seed " << seed;
    }
  }
}

// Past the context the window restarts from the last keep_when_full tokens: the cache, refilled
// from them and then fed one token at a time, writes the same tokens as recomputing the window
// each step, for prompts shorter and longer than the context, every keep from 1 to the context.
TEST(KVCache, GeneratesTheSameTokensAsRecomputingWhenTheWindowRestarts) {
  manual_seed(5);
  models::GPTModel model(models::GPTConfig{.vocab_size = 11, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2});
  model.eval();
  for (int64_t prompt_length : {1, 3, 8, 11}) {
    const Tensor prompt = randint(0, 11, {2, prompt_length});
    for (int64_t keep = 1; keep <= 8; ++keep) {
      models::SamplingOptions options{.temperature = 0.9, .top_k = 5, .keep_when_full = keep};
      Generator g1(keep), g2(keep);
      options.use_kv_cache = true;
      const Tensor cached = models::generate(model, prompt, 25, options, &g1);
      options.use_kv_cache = false;
      const Tensor recomputed = generate(model, prompt, 25, options, &g2);
      EXPECT_EQ(cached.tolist<int64_t>(), recomputed.tolist<int64_t>())
          << "prompt of " << prompt_length << ", keep " << keep;
    }
  }
}

// The window's rule, written out as a plain loop (greedy, one sequence): it starts as the last
// context_length tokens; once it would hold more, it restarts from the last keep tokens.
std::vector<int64_t> generate_greedy_by_hand(models::GPTModel& model, std::vector<int64_t> tokens, int64_t n, int64_t keep) {
  NoGradGuard no_grad;
  const int64_t context = model.config().context_length;
  int64_t start = std::max<int64_t>(0, static_cast<int64_t>(tokens.size()) - context);
  for (int64_t step = 0; step < n; ++step) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    if (T - start > context) start = T - keep;
    const std::vector<int64_t> window(tokens.begin() + start, tokens.end());
    const Tensor logits = model.forward(from_vector(window, {1, T - start}));  // (1, T - start, V)
    tokens.push_back(argmax(logits.select(1, T - start - 1), -1).item<int64_t>());
  }
  return tokens;
}

TEST(Generate, KeepWhenFullRestartsTheWindowFromTheLastTokens) {
  manual_seed(6);
  models::GPTModel model(models::GPTConfig{.vocab_size = 9, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  model.eval();
  const std::vector<int64_t> prompt = {4, 1, 7};
  for (int64_t keep : {0, 2, 5}) {
    for (bool use_kv_cache : {true, false}) {
      models::SamplingOptions options{.temperature = 0.0, .use_kv_cache = use_kv_cache, .keep_when_full = keep};
      const Tensor out = models::generate(model, from_vector(prompt, {1, 3}), 16, options);
      EXPECT_EQ(out.tolist<int64_t>(), generate_greedy_by_hand(model, prompt, 16, keep == 0 ? 6 : keep))
          << "keep_when_full " << keep << (use_kv_cache ? ", cache" : ", recompute");
    }
  }
}

TEST(Generate, OnTokenSeesEachStepsNewTokens) {
  manual_seed(7);
  models::GPTModel model(models::GPTConfig{.vocab_size = 9, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  model.eval();
  std::vector<Tensor> seen;
  const Tensor out = models::generate(model, zeros({2, 2}, kInt64), 5, {.temperature = 0.0}, nullptr,
                              [&](const Tensor& next) { seen.push_back(next.clone()); });
  ASSERT_EQ(seen.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(seen[static_cast<size_t>(i)].sizes(), Shape({2, 1}));
    EXPECT_TRUE(all_close(seen[static_cast<size_t>(i)], out.narrow(1, 2 + i, 1), 0, 0)) << "step " << i;
  }
}

// The ids' buffer grows as tokens are written (past its first 256 columns, twice): 600 new tokens
// begin with the 300 that a shorter call writes, from the same generator.
TEST(Generate, GrowingBufferKeepsTheTokens) {
  manual_seed(10);
  models::GPTModel model(models::GPTConfig{.vocab_size = 9, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  model.eval();
  const Tensor prompt = from_vector(std::vector<int64_t>{4, 1}, {1, 2});
  Generator long_gen(5), short_gen(5);
  const Tensor all = models::generate(model, prompt, 600, {.temperature = 1.0}, &long_gen);
  const Tensor some = generate(model, prompt, 300, {.temperature = 1.0}, &short_gen);
  EXPECT_EQ(all.sizes(), Shape({1, 602}));
  EXPECT_EQ(some.sizes(), Shape({1, 302}));
  EXPECT_TRUE(all_close(all.narrow(1, 0, 302), some, 0, 0));
}

// stop_token: generation ends after the step in which every row has written it; the tokens
// before are the ones generation without it writes.
TEST(Generate, StopTokenEndsGenerationOnceEveryRowWroteIt) {
  manual_seed(8);
  models::GPTModel model(models::GPTConfig{.vocab_size = 9, .context_length = 12, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  model.eval();
  const Tensor prompt = from_vector(std::vector<int64_t>{4, 1}, {1, 2});
  const std::vector<int64_t> all = models::generate(model, prompt, 8, {.temperature = 0.0}).tolist<int64_t>();
  const int64_t stop = all[4];  // greedy's third new token
  const size_t first = static_cast<size_t>(std::find(all.begin() + 2, all.end(), stop) - all.begin());
  const Tensor out = generate(model, prompt, 8, {.temperature = 0.0, .stop_token = stop});
  EXPECT_EQ(out.tolist<int64_t>(), std::vector<int64_t>(all.begin(), all.begin() + static_cast<int64_t>(first) + 1));
  // a token never written: all max_new_tokens
  EXPECT_EQ(generate(model, prompt, 8, {.temperature = 0.0, .stop_token = 100}).size(1), 10);
  expect_error([&] { generate(model, prompt, 3, {.stop_token = -2}); }, {"stop_token must be a token id, or -1"});
}

// forward(idx, key_padding_mask): with an undefined mask it is the plain forward; with one, a
// right-padded row's real positions are the row's alone (causal attention never looks ahead),
// and no position attends to a padded one, in any layer.
TEST(GPTModel, KeyPaddingMaskLeavesRealPositionsAsTheUnpaddedRow) {
  manual_seed(9);
  models::GPTModel model(models::GPTConfig{.vocab_size = 11, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 2});
  model.eval();
  NoGradGuard no_grad;
  const Tensor idx = from_vector(std::vector<int64_t>{3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
  EXPECT_TRUE(all_close(model.forward(idx, Tensor()), model.forward(idx), 0, 0));
  const Tensor padded = from_vector(std::vector<int64_t>{3, 1, 4, 0, 0, 0, 0, 0}, {1, 8});
  const Tensor mask = from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 1, 1, 1}, {1, 8}, kBool);
  const Tensor alone = model.forward(idx.narrow(1, 0, 3));  // (1,3,V)
  EXPECT_TRUE(all_close(model.forward(padded, mask).narrow(1, 0, 3), alone, 1e-6, 1e-6));
  // no position sees a padded one: position 5 (padding itself) reads only its own id and the real
  // positions 0..2, so padding that differs at 3 and 4 alone leaves it as it was (without the
  // mask it does not)
  const Tensor repadded = from_vector(std::vector<int64_t>{3, 1, 4, 7, 8, 0, 0, 0}, {1, 8});
  EXPECT_TRUE(all_close(model.forward(repadded, mask).narrow(1, 5, 1), model.forward(padded, mask).narrow(1, 5, 1),
                        1e-6, 1e-6));
  EXPECT_FALSE(all_close(model.forward(repadded).narrow(1, 5, 1), model.forward(padded).narrow(1, 5, 1), 1e-6, 1e-6));
  expect_error([&] { model.forward(idx, zeros({1, 7}, kBool)); }, {"key_padding_mask must be bool of shape"});
}

// repeat_batch: one prompt's cache for n rows; each row then continues as that prompt would.
TEST(KVCache, ARepeatedBatchContinuesEachRowAsItsOwnPrompt) {
  manual_seed(5);
  models::GPTModel model(models::GPTConfig{.vocab_size = 13, .context_length = 10, .emb_dim = 16, .n_heads = 4, .n_layers = 2});
  model.eval();
  NoGradGuard no_grad;
  const Tensor prompt = randint(0, 13, {1, 4}), next = randint(0, 13, {3, 2});
  models::GPTCache cache;
  model.forward(prompt, cache);
  cache.repeat_batch(3);
  const Tensor batched = model.forward(next, cache);  // (3, 2, 13)
  for (int64_t row = 0; row < 3; ++row) {
    const Tensor whole = model.forward(cat({prompt, next.narrow(0, row, 1)}, 1)).narrow(1, 4, 2);  // (1, 2, 13)
    EXPECT_TRUE(all_close(batched.narrow(0, row, 1), whole, 1e-6, 1e-5)) << "row " << row;
  }
  expect_error([&] { cache.repeat_batch(2); }, {"KVCache: repeat_batch(2) needs a cache of batch 1 holding positions"});
}

TEST(KVCache, MisuseIsAnError) {
  models::CausalSelfAttention att(models::GPTConfig{.vocab_size = 1, .context_length = 6, .emb_dim = 4, .n_heads = 2});
  models::KVCache cache;
  const Tensor x = zeros({1, 2, 4});
  expect_error([&] { att.forward(x, &cache, Tensor()); }, {"a KVCache is for generation; use it under tg::NoGradGuard"});
  NoGradGuard no_grad;
  att.forward(x, &cache, Tensor());
  expect_error([&] { att.forward(zeros({3, 1, 4}), &cache, Tensor()); }, {"the KVCache holds another batch; clear() it first"});
  expect_error([&] { att.forward(zeros({1, 5, 4}), &cache, Tensor()); },
               {"the KVCache holds 2 positions; 5 more exceed context_length (6)"});
}

TEST(GPTModel, StateDictHasTheBookNamesInOrder) {
  models::GPTConfig cfg{.vocab_size = 5, .context_length = 4, .emb_dim = 4, .n_heads = 2, .n_layers = 1};
  models::GPTModel model(cfg);
  std::vector<std::string> names;
  for (const auto& [name, t] : model.state_dict()) names.push_back(name);
  const std::vector<std::string> want = {
      "tok_emb.weight", "pos_emb.weight", "trf_blocks.0.att.mask", "trf_blocks.0.att.W_query.weight",
      "trf_blocks.0.att.W_key.weight", "trf_blocks.0.att.W_value.weight", "trf_blocks.0.att.out_proj.weight",
      "trf_blocks.0.att.out_proj.bias", "trf_blocks.0.ff.layers.0.weight", "trf_blocks.0.ff.layers.0.bias",
      "trf_blocks.0.ff.layers.2.weight", "trf_blocks.0.ff.layers.2.bias", "trf_blocks.0.norm1.weight",
      "trf_blocks.0.norm1.bias", "trf_blocks.0.norm2.weight", "trf_blocks.0.norm2.bias", "final_norm.weight",
      "final_norm.bias", "out_head.weight"};
  EXPECT_EQ(names, want);
}

TEST(GPTModel, BadConfigsAreErrorsNamingTheField) {
  const models::GPTConfig good{.vocab_size = 5, .context_length = 4, .emb_dim = 4, .n_heads = 2, .n_layers = 1};
  auto with = [&](auto change) {
    models::GPTConfig c = good;
    change(c);
    return c;
  };
  expect_error([&] { models::GPTModel m(with([](models::GPTConfig& c) { c.n_layers = 0; })); }, {"n_layers must be positive, got 0"});
  expect_error([&] { models::GPTModel m(with([](models::GPTConfig& c) { c.vocab_size = -1; })); }, {"vocab_size must be positive"});
  expect_error([&] { models::GPTModel m(with([](models::GPTConfig& c) { c.n_heads = 3; })); },
               {"emb_dim (4) must be divisible by n_heads (3)"});
  expect_error([&] { models::GPTModel m(with([](models::GPTConfig& c) { c.drop_rate = 1.0; })); },
               {"drop_rate must be in [0, 1), got 1.0"});
  expect_error([&] { models::GPTModel m(with([](models::GPTConfig& c) { c.layer_norm_eps = 0.0; })); },
               {"layer_norm_eps must be positive, got 0.0"});
}

TEST(GPTModel, BadTokenIdsAreErrors) {
  models::GPTModel model(models::GPTConfig{.vocab_size = 5, .context_length = 4, .emb_dim = 4, .n_heads = 2, .n_layers = 1});
  expect_error([&] { model.forward(zeros({2, 3})); }, {"int64", "(2,3)", "float32"});
  expect_error([&] { model.forward(zeros({3}, kInt64)); }, {"(batch, num_tokens)", "(3)"});
  expect_error([&] { model.forward(zeros({1, 5}, kInt64)); }, {"num_tokens (5) exceeds context_length (4)"});
  expect_error([&] { model.forward(full({1, 2}, 5, kInt64)); }, {"index out of range", "= 5"});
}

TEST(GPTModel, EvalIsDeterministicAndTrainingDropoutIsNot) {
  models::GPTModel model(models::GPTConfig{.vocab_size = 7, .context_length = 6, .emb_dim = 8, .n_heads = 2, .n_layers = 2,
                           .drop_rate = 0.5});
  const Tensor x = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {1, 6});
  model.eval();
  EXPECT_TRUE(all_close(model.forward(x), model.forward(x), 0, 0));
  model.train();
  EXPECT_FALSE(all_close(model.forward(x), model.forward(x), 0, 0));
}

}  // namespace
}  // namespace tg::nn
