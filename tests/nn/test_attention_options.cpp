// MultiHeadAttention::forward(x, options): cross-attention (kv), the causal mask off, and a key
// padding mask, against PyTorch 1.13 (the "attention_option_cases" of module_torch.json, made by
// make_module_reference.py): outputs, kept weights, input and parameter gradients, with and
// without dropout. Then: no NaN from a query whose keys are all padded, the bad inputs, and
// float64 gradchecks of the options.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "nn/gradcheck.h"
#include "nn/nn.h"
#include "test_util.h"

namespace tg::nn {
namespace {

using test::all_close;
using test::decode_reference;
using test::error_of;

const json::Value& option_cases() {
  static const json::Value doc = json::parse_file(std::string(TG_REFERENCE_DIR) + "/module_torch.json");
  return doc["attention_option_cases"];
}

const json::Value& option_case(const std::string& id) {
  const json::Value& cases = option_cases();
  for (size_t i = 0; i < cases.size(); ++i)
    if (cases[i]["id"].as_string() == id) return cases[i];
  throw Error("module_torch.json has no attention option case '" + id + "'");
}

Tensor bool_matrix(const json::Value& rows) {
  std::vector<int64_t> values;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) values.push_back(rows[i][j].as_bool() ? 1 : 0);
  return from_vector(values, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}).to_bool();
}

// Builds the case's module from its seed, runs forward(x, options) under the dropout seed the
// script used, backpropagates g and compares everything the script recorded.
void expect_case_matches_torch(const std::string& id) {
  SCOPED_TRACE("case " + id);
  const json::Value& c = option_case(id);
  const json::Value& a = c["args"];
  manual_seed(c["seed"].as_uint64());
  MultiHeadAttention mha(a[0].as_int64(), a[1].as_int64(), a[2].as_int64(), a[3].as_double(), a[4].as_int64(),
                         a.size() > 5 && a[5].as_bool());
  mha.keep_attention_weights = true;
  Tensor x = decode_reference(c["x"]).requires_grad_();
  AttentionOptions options;
  options.causal = c["causal"].as_bool();
  if (c.contains("kv")) options.kv = decode_reference(c["kv"]).requires_grad_();
  if (c.contains("key_padding_mask")) options.key_padding_mask = bool_matrix(c["key_padding_mask"]);
  manual_seed(1001);  // what dropout draws inside forward (as the script)
  Tensor y = mha.forward(x, options);
  EXPECT_TRUE(all_close(y, decode_reference(c["y"]), 1e-6, 1e-5)) << "output";
  EXPECT_TRUE(all_close(mha.attention_weights, decode_reference(c["weights"]), 1e-6, 1e-5)) << "attention weights";
  y.backward(decode_reference(c["g"]));
  EXPECT_TRUE(all_close(x.grad(), decode_reference(c["x_grad"]), 1e-6, 1e-5)) << "x gradient";
  if (c.contains("kv")) {
    EXPECT_TRUE(all_close(options.kv.grad(), decode_reference(c["kv_grad"]), 1e-6, 1e-5)) << "kv gradient";
  }
  const NamedTensors params = mha.named_parameters();
  ASSERT_EQ(params.size(), c["grads"].size());
  for (size_t k = 0; k < params.size(); ++k) {
    EXPECT_EQ(params[k].first, c["grads"][k][0].as_string());
    EXPECT_TRUE(all_close(params[k].second.grad(), decode_reference(c["grads"][k][1]), 1e-6, 1e-5)) << params[k].first;
  }
}

TEST(MultiHeadAttention, CrossAttentionMatchesTorch) {
  expect_case_matches_torch("cross_attention");                    // T_q 3, T_k 5, no causal mask
  expect_case_matches_torch("cross_attention_causal_more_keys");   // T_q 3 < T_k 6, causal at the top left
  expect_case_matches_torch("cross_attention_causal_fewer_keys");  // T_q 5 > T_k 2, qkv_bias
}

TEST(MultiHeadAttention, WithoutCausalMaskMatchesTorch) { expect_case_matches_torch("self_attention_not_causal"); }

TEST(MultiHeadAttention, KeyPaddingMaskMatchesTorchWithAFullyPaddedRow) {
  expect_case_matches_torch("key_padding_causal");
  expect_case_matches_torch("key_padding_not_causal");
}

TEST(MultiHeadAttention, DropoutInTrainingWithMasksMatchesTorch) {
  expect_case_matches_torch("cross_attention_key_padding_dropout");
  expect_case_matches_torch("key_padding_causal_dropout");
}

TEST(MultiHeadAttention, EveryOptionCaseOfTheReferenceIsChecked) {
  EXPECT_EQ(option_cases().size(), 8u);  // the four tests above name all of them
}

TEST(MultiHeadAttention, DefaultOptionsAreTheNotebooksForward) {
  manual_seed(123);
  MultiHeadAttention mha(3, 4, 6, 0.0, 2);
  Tensor x = test::normal_tensor({2, 5, 3}, 7, kFloat32);
  const std::vector<float> plain = mha.forward(x).tolist<float>();
  EXPECT_EQ(mha.forward(x, {}).tolist<float>(), plain);
  EXPECT_EQ(mha.forward(x, {.kv = x}).tolist<float>(), plain);  // self-attention through kv
  EXPECT_EQ(mha.forward(x, {.key_padding_mask = zeros({2, 5}, kBool)}).tolist<float>(), plain);
}

// Batch row 1 has every key padded: its queries attend to nothing.
TEST(MultiHeadAttention, FullyPaddedQueriesGetZeroWeightsAndNoNaNForwardOrBackward) {
  manual_seed(5);
  MultiHeadAttention mha(4, 4, 6, 0.0, 2, true);
  mha.keep_attention_weights = true;
  Tensor x = test::normal_tensor({2, 3, 4}, 1, kFloat32).requires_grad_();
  Tensor kv = test::normal_tensor({2, 5, 4}, 2, kFloat32).requires_grad_();
  Tensor padded = tensor({{false, false, true, false, true}, {true, true, true, true, true}});
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    mha.zero_grad();
    x.zero_grad();
    kv.zero_grad();
    AnomalyModeGuard anomaly;  // throws if any op's forward gives a NaN, or a backward a NaN/Inf
    Tensor y = mha.forward(x, {.kv = kv, .causal = causal, .key_padding_mask = padded});
    EXPECT_TRUE(all_close(mha.attention_weights[1], zeros({2, 3, 5}), 0, 0));
    EXPECT_TRUE(all_close(y[1], mha.out_proj->bias.expand({3, 4}), 0, 0));  // context 0: out_proj's bias
    EXPECT_TRUE(all_close(mha.attention_weights.select(-1, 2), zeros({2, 2, 3}), 0, 0));  // padded key
    y.backward(ones_like(y));
    EXPECT_TRUE(all_close(x.grad()[1], zeros({3, 4}), 0, 0));  // row 1's queries affect nothing
    EXPECT_TRUE(all_close(kv.grad()[1], zeros({5, 4}), 0, 0));
    for (const auto& [name, p] : mha.named_parameters()) {
      for (double v : p.grad().tolist<double>()) ASSERT_TRUE(std::isfinite(v)) << name;
    }
  }
}

TEST(MultiHeadAttention, BadOptionsAreNamed) {
  MultiHeadAttention mha(3, 4, 6, 0.0, 2);
  Tensor x = ones({2, 4, 3});
  EXPECT_EQ(error_of([] { MultiHeadAttention(3, 10, 6, 0.0, 4); }),
            "MultiHeadAttention: d_out (10) must be divisible by num_heads (4)");
  EXPECT_EQ(error_of([&] { mha.forward(ones({4, 3}), {.causal = false}); }),
            "MultiHeadAttention: expected input of shape (b, num_tokens, 3), got (4,3)");
  EXPECT_EQ(error_of([&] { mha.forward(ones({2, 7, 3}), {.kv = x}); }),
            "MultiHeadAttention: num_tokens (7) exceeds context_length (6)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.kv = ones({2, 5, 2})}); }),
            "MultiHeadAttention: kv of shape (2,5,2) has width 2, but keys and values are projected from d_in = 3 "
            "features, as the queries from x (2,4,3)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.kv = ones({5, 3})}); }),
            "MultiHeadAttention: expected kv of shape (b, num_tokens, 3), got (5,3)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.kv = ones({2, 8, 3}), .causal = false}); }),
            "MultiHeadAttention: kv num_tokens (8) exceeds context_length (6)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.kv = ones({3, 5, 3})}); }),
            "MultiHeadAttention: x of shape (2,4,3) and kv of shape (3,5,3) have different batch sizes (2 vs 3)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.key_padding_mask = zeros({2, 4})}); }),
            "MultiHeadAttention: key_padding_mask must be bool of shape (b, T_k) = (2,4), true = padded; "
            "got float32 of shape (2,4)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.kv = ones({2, 5, 3}), .key_padding_mask = zeros({2, 4}, kBool)}); }),
            "MultiHeadAttention: key_padding_mask must be bool of shape (b, T_k) = (2,5), true = padded; "
            "got bool of shape (2,4)");
  EXPECT_EQ(error_of([&] { mha.forward(x, {.key_padding_mask = zeros({4}, kBool)}); }),
            "MultiHeadAttention: key_padding_mask must be bool of shape (b, T_k) = (2,4), true = padded; "
            "got bool of shape (4)");
}

// Float64 gradchecks of the options: every parameter, x and kv.
GradcheckResult check_options(MultiHeadAttention& mha, const Tensor& x, const Tensor& kv, bool causal,
                              const Tensor& padded) {
  return gradcheck(mha, {x, kv}, [&](const std::vector<Tensor>& in) {
    return mha.forward(in[0], {.kv = in[1], .causal = causal, .key_padding_mask = padded});
  });
}

TEST(MultiHeadAttention, CrossAttentionOptionsPassGradcheckF64) {
  manual_seed(3);
  MultiHeadAttention mha(3, 4, 6, 0.0, 2, true);
  Tensor x = test::normal_tensor({2, 3, 3}, 11).requires_grad_();
  Tensor kv = test::normal_tensor({2, 4, 3}, 12).requires_grad_();
  Tensor padded = tensor({{false, true, false, true}, {true, true, true, true}});  // row 1: every key padded
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    const GradcheckResult none = check_options(mha, x, kv, causal, Tensor());
    EXPECT_TRUE(none.passed) << none;
    const GradcheckResult padding = check_options(mha, x, kv, causal, padded);
    EXPECT_TRUE(padding.passed) << padding;
    ASSERT_EQ(padding.runs[0].inputs.size(), 2u + 8u);  // x, kv, then 4 weights and 4 biases
    EXPECT_EQ(padding.runs[0].inputs[2].name, "W_query.weight");
  }
}

TEST(MultiHeadAttention, DropoutInTrainingPassesGradcheckF64WithTheMaskReplayed) {
  manual_seed(4);
  MultiHeadAttention mha(4, 4, 6, 0.3, 2);
  Tensor x = test::normal_tensor({2, 3, 4}, 13).requires_grad_();
  Tensor kv = test::normal_tensor({2, 5, 4}, 14).requires_grad_();
  Tensor padded = tensor({{false, false, false, true, true}, {true, false, true, false, false}});
  const GradcheckResult r = check_options(mha, x, kv, true, padded);
  EXPECT_TRUE(r.passed) << r;
}

}  // namespace
}  // namespace tg::nn
