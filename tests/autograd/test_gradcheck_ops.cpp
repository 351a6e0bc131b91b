// tests/autograd/test_gradcheck_ops.cpp — tg::gradcheck in float64 of every differentiable op
// in autograd/ops.h, on plain, broadcast and non-contiguous (transposed, sliced) inputs.
//
// One test per check: GradcheckOps.BackwardMatchesFiniteDifferences/<name>. Inputs are drawn
// from std::mt19937 with a fixed seed per check, in domains where each op is smooth (log and
// sqrt on positive values, abs and relu away from 0, no ties for max/min). Elementwise and
// broadcasting checks also fuzz (options.fuzz): a failure prints the run seed to replay.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>

#include "autograd/random/generator.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"

namespace tg {
namespace {

// --- inputs --------------------------------------------------------------------------------------------

enum class Domain { Normal, Positive, AwayFromZero };

// float64 values from std::mt19937(seed): normal, in [0.2, 2.2), or with |x| in [0.5, 2).
Tensor draw(const Shape& shape, uint32_t seed, Domain domain = Domain::Normal) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) {
    switch (domain) {
      case Domain::Normal: v = normal(rng); break;
      case Domain::Positive: v = 0.2 + 2.0 * uniform(rng); break;
      case Domain::AwayFromZero: v = (0.5 + 1.5 * uniform(rng)) * (uniform(rng) < 0.5 ? -1.0 : 1.0); break;
    }
  }
  return from_vector(values, shape, kFloat64);
}

Tensor needs_grad(Tensor t) {
  t.requires_grad_(true);
  return t;
}

// A leaf requiring grad, contiguous.
Tensor in(const Shape& shape, uint32_t seed, Domain domain = Domain::Normal) {
  return needs_grad(draw(shape, seed, domain));
}

// The same kind of leaf, stored transposed: its last two dims swapped in memory.
Tensor in_transposed(const Shape& shape, uint32_t seed, Domain domain = Domain::Normal) {
  Shape swapped = shape;
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  return needs_grad(draw(swapped, seed, domain).transpose(-1, -2).detach());
}

// The same kind of leaf, every other element of a buffer twice as wide in the last dim.
Tensor in_sliced(const Shape& shape, uint32_t seed, Domain domain = Domain::Normal) {
  Shape wide = shape;
  wide.back() *= 2;
  return needs_grad(draw(wide, seed, domain).slice(-1, 0, std::nullopt, 2).detach());
}

Tensor constant(const Shape& shape, uint32_t seed) { return draw(shape, seed); }

Tensor mask(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> bits(static_cast<size_t>(shape_numel(shape)));
  for (int64_t& b : bits) b = rng() % 3 == 0;
  return from_vector(bits, shape, kBool);
}

Tensor indices(const std::vector<int64_t>& values, const Shape& shape) { return from_vector(values, shape, kInt64); }

// --- the checks ----------------------------------------------------------------------------------------------

// fn and inputs are plain function pointers (each lambda below captures nothing): a std::function
// per lambda would be two more class templates instantiated for each of the ~100 checks.
struct OpCheck {
  std::string name;  // the test's name: [A-Za-z0-9_]
  Tensor (*fn)(const std::vector<Tensor>&);
  std::vector<Tensor> (*inputs)();  // made when the test runs
  int fuzz = 0;
};

// How GoogleTest prints a check (in failure messages): by its name.
void PrintTo(const OpCheck& check, std::ostream* os) { *os << check.name; }

using X = const std::vector<Tensor>&;

std::vector<OpCheck> creation_and_view_checks() {
  return {
      {"tril_diag_m1", [](X x) { return tril(x[0], -1); }, [] { return std::vector{in({3, 4}, 1)}; }},
      {"triu_diag_1_batched", [](X x) { return triu(x[0], 1); }, [] { return std::vector{in({2, 3, 3}, 2)}; }},
      {"triu_transposed", [](X x) { return triu(x[0], 0); }, [] { return std::vector{in_transposed({3, 3}, 3)}; }},
      {"stack_dim1", [](X x) { return stack({x[0], x[1], x[2]}, 1); },
       [] { return std::vector{in({2, 3}, 4), in_transposed({2, 3}, 5), in_sliced({2, 3}, 6)}; }},
      {"cat_dim0", [](X x) { return cat({x[0], x[1]}, 0); }, [] { return std::vector{in({2, 3}, 7), in({1, 3}, 8)}; }},
      {"cat_dim_m1_strided", [](X x) { return cat({x[0], x[1]}, -1); },
       [] { return std::vector{in_transposed({3, 2}, 9), in_sliced({3, 4}, 10)}; }},
      {"view", [](X x) { return x[0].view({2, 6}); }, [] { return std::vector{in({3, 4}, 11)}; }},
      {"reshape_transposed", [](X x) { return x[0].reshape({12}); }, [] { return std::vector{in_transposed({3, 4}, 12)}; }},
      {"flatten", [](X x) { return x[0].flatten(1); }, [] { return std::vector{in({2, 2, 3}, 13)}; }},
      {"transpose", [](X x) { return x[0].transpose(0, 2); }, [] { return std::vector{in({2, 3, 2}, 14)}; }},
      {"permute_sliced", [](X x) { return x[0].permute({2, 0, 1}); }, [] { return std::vector{in_sliced({2, 3, 2}, 15)}; }},
      {"t", [](X x) { return x[0].t(); }, [] { return std::vector{in({2, 3}, 16)}; }},
      {"mT", [](X x) { return x[0].mT(); }, [] { return std::vector{in({2, 2, 3}, 17)}; }},
      {"unsqueeze", [](X x) { return x[0].unsqueeze(1); }, [] { return std::vector{in_transposed({2, 3}, 18)}; }},
      {"squeeze", [](X x) { return x[0].squeeze(); }, [] { return std::vector{in({1, 3, 1, 2}, 19)}; }},
      {"squeeze_dim", [](X x) { return x[0].squeeze(1); }, [] { return std::vector{in({3, 1, 2}, 20)}; }},
      {"expand", [](X x) { return mul(x[0].expand({2, 3, 4}), constant({2, 3, 4}, 21)); },
       [] { return std::vector{in({3, 1}, 22)}; }},
      {"select", [](X x) { return x[0].select(1, -1); }, [] { return std::vector{in_sliced({3, 4}, 23)}; }},
      {"narrow", [](X x) { return x[0].narrow(0, 1, 2); }, [] { return std::vector{in_transposed({4, 3}, 24)}; }},
      {"slice_step_2", [](X x) { return x[0].slice(1, 1, std::nullopt, 2); }, [] { return std::vector{in({3, 7}, 25)}; }},
      {"contiguous", [](X x) { return x[0].contiguous(); }, [] { return std::vector{in_transposed({3, 4}, 26)}; }},
      {"clone", [](X x) { return x[0].clone(); }, [] { return std::vector{in_sliced({2, 3}, 27)}; }},
  };
}

std::vector<OpCheck> arithmetic_checks() {
  const int fuzz = 4;
  return {
      {"add_broadcast_alpha", [](X x) { return add(x[0], x[1], 2.0); }, [] { return std::vector{in({3, 4}, 30), in({4}, 31)}; }, fuzz},
      {"add_transposed_sliced", [](X x) { return add(x[0], x[1]); },
       [] { return std::vector{in_transposed({3, 4}, 32), in_sliced({3, 4}, 33)}; }, fuzz},
      {"sub_broadcast_alpha", [](X x) { return sub(x[0], x[1], -0.5); }, [] { return std::vector{in({2, 1, 3}, 34), in({4, 1}, 35)}; }, fuzz},
      {"mul_broadcast", [](X x) { return mul(x[0], x[1]); }, [] { return std::vector{in({2, 3, 4}, 36), in({3, 1}, 37)}; }, fuzz},
      {"mul_same_input_twice", [](X x) { return mul(x[0], x[0]); }, [] { return std::vector{in({3, 3}, 38)}; }},
      {"div_broadcast", [](X x) { return div(x[0], x[1]); },
       [] { return std::vector{in({3, 4}, 39), in({4}, 40, Domain::AwayFromZero)}; }, fuzz},
      {"div_transposed_denominator", [](X x) { return div(x[0], x[1]); },
       [] { return std::vector{in({3, 3}, 41), in_transposed({3, 3}, 42, Domain::AwayFromZero)}; }},
      {"add_scalar", [](X x) { return add(x[0], 2.5); }, [] { return std::vector{in({3, 2}, 43)}; }},
      {"sub_scalar", [](X x) { return sub(x[0], 1.5); }, [] { return std::vector{in({3, 2}, 44)}; }},
      {"mul_scalar", [](X x) { return mul(x[0], -3.0); }, [] { return std::vector{in_sliced({3, 2}, 45)}; }},
      {"div_scalar", [](X x) { return div(x[0], 4.0); }, [] { return std::vector{in({3, 2}, 46)}; }},
      {"rsub", [](X x) { return rsub(x[0], 1.0); }, [] { return std::vector{in({3, 2}, 47)}; }},
      {"rdiv", [](X x) { return rdiv(x[0], 2.0); }, [] { return std::vector{in({3, 2}, 48, Domain::AwayFromZero)}; }},
      {"neg", [](X x) { return neg(x[0]); }, [] { return std::vector{in_transposed({3, 2}, 49)}; }},
      {"pow_square", [](X x) { return pow(x[0], 2.0); }, [] { return std::vector{in({3, 4}, 50)}; }, fuzz},
      {"pow_minus_1_5", [](X x) { return pow(x[0], -1.5); }, [] { return std::vector{in({3, 4}, 51, Domain::Positive)}; }, fuzz},
      {"pow_tensor_broadcast", [](X x) { return pow(x[0], x[1]); },
       [] { return std::vector{in({3, 4}, 52, Domain::Positive), in({4}, 53)}; }, fuzz},
  };
}

std::vector<OpCheck> elementwise_checks() {
  const int fuzz = 3;
  return {
      {"exp", [](X x) { return exp(x[0]); }, [] { return std::vector{in({3, 4}, 60)}; }, fuzz},
      {"log", [](X x) { return log(x[0]); }, [] { return std::vector{in({3, 4}, 61, Domain::Positive)}; }, fuzz},
      {"sqrt", [](X x) { return sqrt(x[0]); }, [] { return std::vector{in({3, 4}, 62, Domain::Positive)}; }, fuzz},
      {"abs", [](X x) { return abs(x[0]); }, [] { return std::vector{in({3, 4}, 63, Domain::AwayFromZero)}; }, fuzz},
      {"clamp_both", [](X x) { return clamp(x[0], -0.5, 0.5); }, [] { return std::vector{in({4, 5}, 64)}; }, fuzz},
      {"clamp_min_only", [](X x) { return clamp(x[0], 0.1, std::nullopt); }, [] { return std::vector{in_transposed({4, 5}, 65)}; }},
      {"tanh", [](X x) { return tanh(x[0]); }, [] { return std::vector{in({3, 4}, 66)}; }, fuzz},
      {"sigmoid", [](X x) { return sigmoid(x[0]); }, [] { return std::vector{in_sliced({3, 4}, 67)}; }, fuzz},
      {"silu", [](X x) { return silu(x[0]); }, [] { return std::vector{in({3, 4}, 81)}; }, fuzz},
      {"swiglu", [](X x) { return swiglu(x[0], x[1]); },
       [] { return std::vector{in({3, 4}, 82), in_transposed({3, 4}, 83)}; }, fuzz},
      {"relu", [](X x) { return relu(x[0]); }, [] { return std::vector{in({3, 4}, 68, Domain::AwayFromZero)}; }, fuzz},
      {"gelu_none", [](X x) { return gelu(x[0], "none"); }, [] { return std::vector{in({3, 4}, 69)}; }, fuzz},
      {"gelu_tanh", [](X x) { return gelu(x[0], "tanh"); }, [] { return std::vector{in_transposed({3, 4}, 70)}; }, fuzz},
      {"where_broadcast", [](X x) { return where(mask({3, 1}, 71), x[0], x[1]); },
       [] { return std::vector{in({3, 4}, 72), in({4}, 73)}; }},
      {"where_strided", [](X x) { return where(mask({3, 3}, 74), x[0], x[1]); },
       [] { return std::vector{in_transposed({3, 3}, 75), in_sliced({3, 3}, 76)}; }},
      {"masked_fill_broadcast_mask", [](X x) { return masked_fill(x[0], mask({1, 4}, 77), 0.5); },
       [] { return std::vector{in({2, 3, 4}, 78)}; }},
      {"masked_fill_minus_inf_then_softmax", [](X x) { return softmax(masked_fill(x[0], mask({3, 4}, 79), -INFINITY), -1); },
       [] { return std::vector{in({3, 4}, 80)}; }},
  };
}

std::vector<OpCheck> reduction_checks() {
  return {
      {"sum_all", [](X x) { return sum(x[0]); }, [] { return std::vector{in_transposed({3, 4}, 90)}; }},
      {"sum_dim_keepdim", [](X x) { return sum(x[0], -1, true); }, [] { return std::vector{in({2, 3, 4}, 91)}; }},
      {"mean_all", [](X x) { return mean(x[0]); }, [] { return std::vector{in({3, 4}, 92)}; }},
      {"mean_dim", [](X x) { return mean(x[0], 0); }, [] { return std::vector{in_sliced({3, 4}, 93)}; }},
      {"var_dim_unbiased", [](X x) { return var(x[0], 1); }, [] { return std::vector{in({3, 5}, 94)}; }},
      {"var_dim_biased_keepdim", [](X x) { return var(x[0], 0, false, true); }, [] { return std::vector{in_transposed({4, 3}, 95)}; }},
      {"var_all", [](X x) { return var(x[0]); }, [] { return std::vector{in({3, 4}, 96)}; }},
      {"max_all", [](X x) { return max(x[0]); }, [] { return std::vector{in({3, 4}, 97)}; }},
      {"min_all", [](X x) { return min(x[0]); }, [] { return std::vector{in_sliced({3, 4}, 98)}; }},
      {"max_dim", [](X x) { return max(x[0], 1).values; }, [] { return std::vector{in({3, 5}, 99)}; }},
      {"min_dim_keepdim", [](X x) { return min(x[0], 0, true).values; }, [] { return std::vector{in_transposed({4, 3}, 100)}; }},
      {"sum_to", [](X x) { return sum_to(x[0], {3, 1}); }, [] { return std::vector{in({2, 3, 4}, 101)}; }},
  };
}

std::vector<OpCheck> matmul_and_nn_checks() {
  auto mm = [](X x) { return matmul(x[0], x[1]); };
  return {
      {"matmul_dot", mm, [] { return std::vector{in({4}, 110), in({4}, 111)}; }},
      {"matmul_vec_mat", mm, [] { return std::vector{in({3}, 112), in({3, 4}, 113)}; }},
      {"matmul_mat_vec", mm, [] { return std::vector{in({4, 3}, 114), in({3}, 115)}; }},
      {"matmul_mat_mat", mm, [] { return std::vector{in({3, 4}, 116), in({4, 2}, 117)}; }},
      {"matmul_transposed_operands", mm, [] { return std::vector{in_transposed({3, 4}, 118), in_transposed({4, 2}, 119)}; }},
      {"matmul_sliced_operand", mm, [] { return std::vector{in_sliced({3, 4}, 120), in({4, 2}, 121)}; }},
      {"matmul_batched_broadcast", mm, [] { return std::vector{in({2, 1, 2, 3}, 122), in({2, 3, 2}, 123)}; }},
      {"matmul_vec_batched", mm, [] { return std::vector{in({3}, 124), in({2, 3, 2}, 125)}; }},
      {"softmax_last_dim", [](X x) { return softmax(x[0], -1); }, [] { return std::vector{in({3, 4}, 130)}; }},
      {"softmax_dim0_transposed", [](X x) { return softmax(x[0], 0); }, [] { return std::vector{in_transposed({3, 4}, 131)}; }},
      {"log_softmax_last_dim", [](X x) { return log_softmax(x[0], -1); }, [] { return std::vector{in({3, 4}, 132)}; }},
      {"log_softmax_3d_dim1_sliced", [](X x) { return log_softmax(x[0], 1); }, [] { return std::vector{in_sliced({2, 3, 2}, 133)}; }},
      {"cross_entropy", [](X x) { return cross_entropy(x[0], indices({1, 0, 3}, {3})); }, [] { return std::vector{in({3, 4}, 134)}; }},
      {"cross_entropy_transposed_logits", [](X x) { return cross_entropy(x[0], indices({2, 2}, {2})); },
       [] { return std::vector{in_transposed({2, 3}, 135)}; }},
      {"cross_entropy_sum_smoothing_ignore", [](X x) { return cross_entropy(x[0], indices({1, -100, 3}, {3}), "sum", -100, 0.3); },
       [] { return std::vector{in({3, 4}, 148)}; }},
      {"cross_entropy_bct_none", [](X x) { return cross_entropy(x[0], indices({0, 2, 1, 1}, {2, 2}), "none"); },
       [] { return std::vector{in_transposed({2, 3, 2}, 149)}; }},
      {"cross_entropy_single", [](X x) { return cross_entropy(x[0], indices({1}, {})); }, [] { return std::vector{in({4}, 136)}; }},
      {"embedding_repeated_indices", [](X x) { return embedding(x[0], indices({1, 3, 1, 0, 3}, {5})); },
       [] { return std::vector{in({4, 3}, 137)}; }},
      {"embedding_2d_indices_transposed_weight", [](X x) { return embedding(x[0], indices({2, 0, 2, 1}, {2, 2})); },
       [] { return std::vector{in_transposed({3, 2}, 138)}; }},
      {"layer_norm_weight_bias", [](X x) { return layer_norm(x[0], {4}, x[1], x[2]); },
       [] { return std::vector{in({2, 3, 4}, 139), in({4}, 140), in({4}, 141)}; }},
      {"layer_norm_no_affine", [](X x) { return layer_norm(x[0], {5}); }, [] { return std::vector{in({3, 5}, 142)}; }},
      {"layer_norm_two_dims_strided", [](X x) { return layer_norm(x[0], {2, 3}, x[1], x[2]); },
       [] { return std::vector{in_sliced({2, 2, 3}, 143), in_transposed({2, 3}, 144), in({2, 3}, 145)}; }},
      {"rms_norm_weight", [](X x) { return rms_norm(x[0], {4}, x[1], 1e-6); },
       [] { return std::vector{in({2, 3, 4}, 150), in({4}, 151)}; }},
      {"rms_norm_no_weight", [](X x) { return rms_norm(x[0], {5}); }, [] { return std::vector{in({3, 5}, 152)}; }},
      {"rms_norm_two_dims_strided", [](X x) { return rms_norm(x[0], {2, 3}, x[1], 0.1); },
       [] { return std::vector{in_sliced({2, 2, 3}, 153), in_transposed({2, 3}, 154)}; }},
      // RoPE: x only (cos and sin are constant tables)
      {"rope_heads", [](X x) { return apply_rotary_pos_emb(x[0], x[1], x[2]); },
       [] { return std::vector{in({2, 3, 4, 6}, 155), constant({4, 6}, 156), constant({4, 6}, 157)}; }},
      {"rope_transposed", [](X x) { return apply_rotary_pos_emb(x[0], x[1], x[2]); },
       [] { return std::vector{in_transposed({5, 4}, 158), constant({5, 4}, 159), constant({5, 4}, 160)}; }},
      // dropout: the mask comes from a generator seeded inside fn, so every call draws the same one
      {"dropout_training", [](X x) {
         Generator gen(7);
         return dropout(x[0], 0.4, true, &gen);
       }, [] { return std::vector{in({3, 4}, 146)}; }},
      {"dropout_eval", [](X x) { return dropout(x[0], 0.4, false); }, [] { return std::vector{in({3, 4}, 147)}; }},
  };
}

// Scans, sorting, indexing and elementwise extremes (inputs from normal draws: no ties).
std::vector<OpCheck> index_and_sort_checks() {
  const int fuzz = 3;
  return {
      {"sin", [](X x) { return sin(x[0]); }, [] { return std::vector{in({3, 4}, 160)}; }, fuzz},
      {"cos_transposed", [](X x) { return cos(x[0]); }, [] { return std::vector{in_transposed({3, 4}, 161)}; }},
      {"maximum_broadcast", [](X x) { return maximum(x[0], x[1]); },
       [] { return std::vector{in({3, 4}, 162), in({4}, 163)}; }, fuzz},
      {"minimum_strided", [](X x) { return minimum(x[0], x[1]); },
       [] { return std::vector{in_transposed({3, 3}, 164), in_sliced({3, 3}, 165)}; }},
      {"cumsum_dim1", [](X x) { return cumsum(x[0], 1); }, [] { return std::vector{in({3, 5}, 166)}; }},
      {"cumsum_dim0_transposed", [](X x) { return cumsum(x[0], 0); }, [] { return std::vector{in_transposed({4, 3}, 167)}; }},
      {"sort_values", [](X x) { return sort(x[0], 1).values; }, [] { return std::vector{in({3, 6}, 168)}; }},
      {"sort_descending_dim0", [](X x) { return sort(x[0], 0, true).values; }, [] { return std::vector{in_sliced({5, 2}, 169)}; }},
      {"topk_largest", [](X x) { return topk(x[0], 3).values; }, [] { return std::vector{in({2, 7}, 170)}; }},
      {"topk_smallest_dim0", [](X x) { return topk(x[0], 2, 0, false).values; }, [] { return std::vector{in({5, 3}, 171)}; }},
      {"gather_repeats", [](X x) { return gather(x[0], 1, indices({0, 2, 2, 1, 0, 0}, {2, 3})); },
       [] { return std::vector{in({2, 4}, 172)}; }},
      {"scatter_add_both", [](X x) { return scatter_add(x[0], 0, indices({1, 1, 0, 2}, {2, 2}), x[1]); },
       [] { return std::vector{in({3, 2}, 173), in({2, 2}, 174)}; }},
      {"index_select_repeats", [](X x) { return index_select(x[0], 1, indices({2, 0, 2}, {3})); },
       [] { return std::vector{in_transposed({3, 4}, 175)}; }},
      {"split_weighted", [](X x) {
         std::vector<Tensor> parts = split(x[0], 2, 1);
         return cat({parts[0] * 1.0, parts[1] * 2.0, parts[2] * 3.0}, 1);
       }, [] { return std::vector{in({2, 5}, 176)}; }},
      {"chunk_weighted", [](X x) {
         std::vector<Tensor> parts = chunk(x[0], 2, 0);
         return cat({parts[0] * -1.0, parts[1] * 0.5}, 0);
       }, [] { return std::vector{in({3, 2}, 177)}; }},
  };
}

std::vector<OpCheck> all_checks() {
  std::vector<OpCheck> all;
  for (auto family : {creation_and_view_checks, arithmetic_checks, elementwise_checks, reduction_checks,
                      matmul_and_nn_checks, index_and_sort_checks}) {
    for (OpCheck& c : family()) all.push_back(std::move(c));
  }
  return all;
}

class GradcheckOps : public ::testing::TestWithParam<OpCheck> {};

TEST_P(GradcheckOps, BackwardMatchesFiniteDifferences) {
  const OpCheck& check = GetParam();
  GradcheckOptions options;
  options.fuzz = check.fuzz;
  options.fuzz_seed = 1234;
  std::vector<Tensor> inputs;
  try {
    inputs = check.inputs();
    const GradcheckResult result = gradcheck(check.fn, inputs, options);
    EXPECT_TRUE(result.passed) << check.name << "\n" << result;
  } catch (const Error& e) {
    if (std::string(e.what()).find("not implemented yet") != std::string::npos) GTEST_SKIP() << e.what();
    FAIL() << check.name << " threw: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(, GradcheckOps, ::testing::ValuesIn(all_checks()),
                         [](const ::testing::TestParamInfo<OpCheck>& info) { return info.param.name; });

}  // namespace
}  // namespace tg
