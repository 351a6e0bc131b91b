// The random tensor ops (autograd/ops/random.cpp) against PyTorch, bit for bit.
//
// test_random_kernels.cpp replays the reference vectors through tg::rng on raw buffers; here the
// same vectors go through the TENSOR API, as a user writes them: tg::manual_seed(42);
// tg::randn({4,8,2}); tg::empty({100}).uniform_(-0.1, 0.35); tg::nn::init::linear_init_(...).
// random_ops_torch.json (make_random_ops_reference.py) adds non-contiguous tensors (§10).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autograd/random/generator.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"
#include "autograd/random/random_kernels.h"
#include "autograd/tape.h"
#include "nn/init.h"
#include "rng_replay.h"
#include "test_util.h"

namespace {

using tg::test::error_of;
using tg::test::has_part;

using tg::Generator;
using tg::Shape;
using tg::Tensor;
using tg::json::Value;
using tg_test::ExpectedValue;
using tg_test::Tally;
using tg_test::ValueKind;

// ---- tensors as bits ---------------------------------------------------------------------------

// Append t's values in row-major order as bits (float32 -> 32 bits, float64 -> 64, int64 as is).
void append_tensor_bits(std::vector<uint64_t>& out, const Tensor& t, ValueKind& kind) {
  const Tensor c = t.detach().contiguous();
  const int64_t n = c.numel();
  switch (c.dtype()) {
    case tg::kFloat32:
      kind = ValueKind::Float32;
      for (int64_t i = 0; i < n; ++i) out.push_back(std::bit_cast<uint32_t>(c.data_ptr<float>()[i]));
      break;
    case tg::kFloat64:
      kind = ValueKind::Float64;
      for (int64_t i = 0; i < n; ++i) out.push_back(std::bit_cast<uint64_t>(c.data_ptr<double>()[i]));
      break;
    case tg::kInt64:
      kind = ValueKind::Integer;
      for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<uint64_t>(c.data_ptr<int64_t>()[i]));
      break;
    default:
      ADD_FAILURE() << "append_tensor_bits: unexpected dtype " << tg::dtype_name(c.dtype());
  }
}

std::vector<uint64_t> bits_of(const Tensor& t) {
  std::vector<uint64_t> out;
  ValueKind kind;
  append_tensor_bits(out, t, kind);
  return out;
}

Shape shape_of(const Value& shape) {
  Shape s;
  for (const Value& d : shape.as_array()) s.push_back(d.as_int64());
  return s;
}

tg::ScalarType dtype_of(const Value& call) {
  return call["dtype"].as_string() == "float64" ? tg::kFloat64 : tg::kFloat32;
}

// A tensor holding the given bit patterns (float32 or float64), shaped `shape`.
template <class T>
Tensor tensor_from_bits(const std::vector<T>& values, const Shape& shape) {
  Tensor t = tg::empty(shape, sizeof(T) == 4 ? tg::kFloat32 : tg::kFloat64);
  std::copy(values.begin(), values.end(), t.data_ptr<T>());
  return t;
}

// nn.Linear(in, out, bias) initialised by linear_init_: weight values, then bias values.
Tensor linear_values(int64_t in, int64_t out, bool bias) {
  Tensor w = tg::empty({out, in}).requires_grad_();
  Tensor b = bias ? tg::empty({out}).requires_grad_() : Tensor();
  tg::nn::init::linear_init_(w, b);
  return bias ? tg::cat({w.detach().flatten(), b.detach()}) : w.detach().flatten();
}

Tensor embedding_values(int64_t num, int64_t dim) {
  Tensor w = tg::empty({num, dim}).requires_grad_();
  tg::nn::init::embedding_init_(w);
  return w.detach();
}

// ---- golden vectors through the tensor API -------------------------------------------------------

// The calls each golden vector records (its "call" field), on the default generator, which the
// caller has seeded with tg::manual_seed.
std::vector<uint64_t> tensor_golden_recipe(const Value& vector, ValueKind& kind) {
  const std::string& id = vector["id"].as_string();
  const Shape shape = shape_of(vector["shape"]);
  const tg::ScalarType dtype = vector["dtype"].as_string() == "float64" ? tg::kFloat64 : tg::kFloat32;
  auto starts = [&](const char* prefix) { return id.rfind(prefix, 0) == 0; };
  std::vector<uint64_t> out;
  auto take = [&](const Tensor& t) { append_tensor_bits(out, t, kind); };

  if (starts("engine_u32_")) {  // the raw engine behind the tensor ops
    kind = ValueKind::Integer;
    for (int i = 0; i < 8; ++i) out.push_back(tg::default_generator().random());
  } else if (starts("engine_u64_")) {
    kind = ValueKind::Integer;
    for (int i = 0; i < 8; ++i) out.push_back(tg::default_generator().random64());
  } else if (id == "rand_3x2_x3_seed123") {
    for (int call = 0; call < 3; ++call) take(tg::rand({3, 2}));
  } else if (starts("rand_")) {
    take(tg::rand(shape, nullptr, dtype));
  } else if (id == "uniform_f32_seed7") {
    take(tg::empty({100}).uniform_(-0.1, 0.35));
  } else if (id == "randn_seq_seed3") {
    take(tg::randn({3}));
    take(tg::randn({5}));
  } else if (starts("randn_")) {
    take(tg::randn(shape, nullptr, dtype));
  } else if (starts("normal_f32_")) {
    take(tg::empty(shape).normal_(0.3, 2.5));
  } else if (starts("randint_")) {
    // randint_<low>_<high>_seed0
    size_t a = id.find('_') + 1, b = id.find('_', id.find('_', a) + 1);
    std::string range = id.substr(a, b - a);
    size_t split = range.find('_', 1);
    take(tg::randint(std::stoll(range.substr(0, split)), std::stoll(range.substr(split + 1)), shape));
  } else if (starts("randperm_")) {
    take(tg::randperm(shape[0]));
  } else if (starts("bernoulli_f32_p0.5")) {
    take(tg::empty(shape).bernoulli_(0.5));
  } else if (starts("dropout_ones_p")) {
    const double p = id == "dropout_ones_p0.1_seed9" ? 0.1 : 0.15;
    take(tg::dropout(tg::ones(shape), p, /*training=*/true));
  } else if (id == "multinomial_seq_seed0") {
    const Tensor probs = tg::tensor({0.1f, 0.2f, 0.3f, 0.4f});
    for (int call = 0; call < 8; ++call) take(tg::multinomial(probs, 1));
  } else if (id == "exponential_f32_seed0") {
    take(tg::empty(shape).exponential_(1.0));
  } else if (id == "linear_4x3_seed0") {
    take(linear_values(4, 3, true));
  } else if (starts("embedding_")) {
    take(embedding_values(shape[0], shape[1]));
  } else {
    throw std::runtime_error("no tensor-API recipe for golden vector " + id);
  }
  return out;
}

void replay_golden_through_tensors(const Value& vector, Tally& tally) {
  const std::string& id = vector["id"].as_string();
  tg::manual_seed(tg_test::integer_bits(vector["seed"]));
  ValueKind kind = ValueKind::Integer;
  std::vector<uint64_t> actual = tensor_golden_recipe(vector, kind);
  const int64_t numel = vector["numel"].as_int64();
  std::vector<ExpectedValue> expected;
  const Value& first8 = vector["first8"];
  for (size_t k = 0; k < first8.size(); ++k) {
    expected.push_back({static_cast<int64_t>(k), tg_test::golden_value_bits(first8[k])});
  }
  if (const Value* last8 = vector.find("last8")) {
    for (size_t k = 0; k < last8->size(); ++k) {
      int64_t index = numel - static_cast<int64_t>(last8->size()) + static_cast<int64_t>(k);
      expected.push_back({index, tg_test::golden_value_bits((*last8)[k])});
    }
  }
  tg_test::compare_values(id, kind, actual, numel, expected, tally);
}

// ---- rng_torch.json through the tensor API -----------------------------------------------------

// Probabilities from the file: 1-d when there is one row (as the script made them), else 2-d.
Tensor probs_tensor(const Value& call) {
  const Value& rows = call["probs_bits"];
  const int64_t row_count = static_cast<int64_t>(rows.size());
  const int64_t width = static_cast<int64_t>(rows[0].size());
  const Shape shape = row_count == 1 ? Shape{width} : Shape{row_count, width};
  if (call["dtype"].as_string() == "float64") {
    std::vector<double> flat;
    for (const Value& row : rows.as_array()) {
      std::vector<double> r = tg_test::probs_from_bits<double>(row);
      flat.insert(flat.end(), r.begin(), r.end());
    }
    return tensor_from_bits(flat, shape);
  }
  std::vector<float> flat;
  for (const Value& row : rows.as_array()) {
    std::vector<float> r = tg_test::probs_from_bits<float>(row);
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return tensor_from_bits(flat, shape);
}

// Run one described call (the file's "python" field) on the default generator.
void run_call_through_tensors(const Value& call, std::vector<uint64_t>& out) {
  const std::string& op = call["op"].as_string();
  ValueKind kind;
  auto take = [&](const Tensor& t) { append_tensor_bits(out, t, kind); };
  if (op == "normal") {
    const double mean = call["mean"].as_double(), std = call["std"].as_double();
    if (mean == 0.0 && std == 1.0) take(tg::randn(shape_of(call["shape"]), nullptr, dtype_of(call)));
    else take(tg::empty(shape_of(call["shape"]), dtype_of(call)).normal_(mean, std));
  } else if (op == "uniform") {
    const double low = call["low"].as_double(), high = call["high"].as_double();
    if (low == 0.0 && high == 1.0) take(tg::rand(shape_of(call["shape"]), nullptr, dtype_of(call)));
    else take(tg::empty(shape_of(call["shape"]), dtype_of(call)).uniform_(low, high));
  } else if (op == "randint") {
    take(tg::randint(call["low"].as_int64(), call["high"].as_int64(), shape_of(call["shape"])));
  } else if (op == "randperm") {
    take(tg::randperm(call["n"].as_int64()));
  } else if (op == "bernoulli") {
    take(tg::empty(shape_of(call["shape"]), dtype_of(call)).bernoulli_(call["p"].as_double()));
  } else if (op == "dropout") {
    const Shape shape = shape_of(call["shape"]);
    const Tensor x = call["input"].as_string() == "ones" ? tg::ones(shape) : tg::randn(shape);
    take(tg::dropout(x, call["p"].as_double(), /*training=*/true));
  } else if (op == "exponential") {
    take(tg::empty(shape_of(call["shape"]), dtype_of(call)).exponential_(call["lambda"].as_double()));
  } else if (op == "multinomial") {
    const Tensor probs = probs_tensor(call);
    for (int64_t k = 0; k < call["repeat"].as_int64(); ++k) take(tg::multinomial(probs, 1));
  } else if (op == "linear") {
    take(linear_values(call["in"].as_int64(), call["out"].as_int64(), call["bias"].as_bool()));
  } else if (op == "embedding") {
    take(embedding_values(call["num"].as_int64(), call["dim"].as_int64()));
  } else if (op == "manual_seed") {
    tg::manual_seed(tg_test::integer_bits(call["seed"]));
  } else if (op == "draws") {
    tg::rand({call["n"].as_int64()});
  } else if (op != "get_state") {
    throw std::runtime_error("rng_torch.json: unknown op " + op);
  }
}

void replay_torch_through_tensors(const Value& vector, Tally& tally) {
  const std::string& id = vector["id"].as_string();
  tg::manual_seed(tg_test::integer_bits(vector["seed"]));
  EXPECT_EQ(tg::default_generator().initial_seed(), vector["initial_seed"].as_uint64()) << "vector " << id;
  std::vector<uint64_t> actual;
  for (const Value& call : vector["calls"].as_array()) run_call_through_tensors(call, actual);

  const std::string& kind_name = vector["kind"].as_string();
  const Value& values = vector["values"];
  if (kind_name == "state") {
    std::vector<uint8_t> ours = tg::default_generator().get_state();
    const std::string& hex = values[0].as_string();
    ++tally.vectors;
    ASSERT_EQ(ours.size() * 2, hex.size()) << "vector " << id;
    for (size_t i = 0; i < ours.size(); ++i) {
      uint64_t theirs = tg_test::parse_hex(hex.substr(2 * i, 2));
      ASSERT_EQ(ours[i], theirs) << "vector " << id << ": get_state() byte " << i << " ("
                                 << tg_test::state_field(i) << ")";
    }
    tally.state_bytes += static_cast<int64_t>(ours.size());
    return;
  }
  ValueKind kind = kind_name == "float32"   ? ValueKind::Float32
                   : kind_name == "float64" ? ValueKind::Float64
                                            : ValueKind::Integer;
  std::vector<ExpectedValue> expected;
  for (size_t i = 0; i < values.size(); ++i) {
    expected.push_back({static_cast<int64_t>(i), kind == ValueKind::Integer
                                                     ? tg_test::integer_bits(values[i])
                                                     : tg_test::parse_hex(values[i].as_string())});
  }
  tg_test::compare_values(id, kind, actual, static_cast<int64_t>(values.size()), expected, tally);
}

// ---- random_ops_torch.json: non-contiguous tensors -----------------------------------------------

const Value& random_ops_file() {
  static const Value file =
      tg::json::parse_file(std::string(TG_REFERENCE_DIR) + "/random_ops_torch.json");
  return file;
}

// b = empty(shape); fill(view(b)); return b: the whole storage in address order.
Tensor fill_base(const Shape& shape, const std::function<Tensor(const Tensor&)>& view,
                 const std::function<void(Tensor)>& fill, tg::ScalarType dtype = tg::kFloat32) {
  Tensor base = tg::empty(shape, dtype);
  fill(view(base));
  return base;
}

Tensor transpose_of(const Tensor& b) { return b.t(); }
Tensor every_other_column(const Tensor& b) { return b.slice(1, 0, std::nullopt, 2); }

// The same calls as make_random_ops_reference.py, per id.
std::vector<uint64_t> noncontiguous_recipe(const Value& vector, ValueKind& kind) {
  const std::string& id = vector["id"].as_string();
  std::vector<uint64_t> out;
  auto take = [&](const Tensor& t) { append_tensor_bits(out, t, kind); };
  auto permute201 = [](const Tensor& b) { return b.permute({2, 0, 1}); };
  auto probs = [&] {
    std::vector<float> p;
    for (const Value& b : vector["probs_bits"].as_array()) {
      p.push_back(std::bit_cast<float>(static_cast<uint32_t>(tg_test::parse_hex(b.as_string()))));
    }
    return tensor_from_bits(p, shape_of(vector["probs_shape"]));
  };
  if (id == "uniform_t_4x6") {
    take(fill_base({4, 6}, transpose_of, [](Tensor v) { v.uniform_(); }));
  } else if (id == "uniform_t_4x6_f64_m2_3") {
    take(fill_base({4, 6}, transpose_of, [](Tensor v) { v.uniform_(-2.0, 3.0); }, tg::kFloat64));
  } else if (id == "uniform_slice_4x6_step2") {
    take(every_other_column(tg::empty({4, 6})).uniform_());
  } else if (id == "uniform_permute_2x3x4") {
    take(fill_base({2, 3, 4}, permute201, [](Tensor v) { v.uniform_(); }));
  } else if (id == "normal_t_6x8") {
    take(fill_base({6, 8}, transpose_of, [](Tensor v) { v.normal_(); }));
  } else if (id == "normal_slice_8x8_step2") {
    take(every_other_column(tg::empty({8, 8})).normal_());
  } else if (id == "normal_t_6x8_f64_0.5_2") {
    take(fill_base({6, 8}, transpose_of, [](Tensor v) { v.normal_(0.5, 2.0); }, tg::kFloat64));
  } else if (id == "normal_permute_2x3x4") {
    take(fill_base({2, 3, 4}, permute201, [](Tensor v) { v.normal_(); }));
  } else if (id == "normal_narrow_10x8_rows2to6") {
    take(tg::empty({10, 8}).narrow(0, 2, 4).normal_());
  } else if (id == "normal_t_1x20") {
    take(tg::empty({1, 20}).t().normal_());
  } else if (id == "normal_cache_then_t_4x5") {
    take(tg::randn({1}));
    take(fill_base({4, 5}, transpose_of, [](Tensor v) { v.normal_(); }));
  } else if (id == "bernoulli_t_5x4_p0.3") {
    take(fill_base({5, 4}, transpose_of, [](Tensor v) { v.bernoulli_(0.3); }));
  } else if (id == "exponential_t_5x4_rate2") {
    take(fill_base({5, 4}, transpose_of, [](Tensor v) { v.exponential_(2.0); }));
  } else if (id == "random_t_5x4_int64_m5_100") {
    take(fill_base({5, 4}, transpose_of, [](Tensor v) { v.random_(-5, 100); }, tg::kInt64));
  } else if (id == "random_f32_n10_0_1000") {
    take(tg::empty({10}).random_(0, 1000));
  } else if (id == "rand_like_t_4x6") {
    take(tg::rand_like(tg::empty({4, 6}).t()));
  } else if (id == "randn_like_t_4x6") {
    take(tg::randn_like(tg::empty({4, 6}).t()));
  } else if (id == "randn_like_slice_8x8_step2") {
    take(tg::randn_like(every_other_column(tg::empty({8, 8}))));
  } else if (id == "multinomial_t_3x5_x4") {
    const Tensor p = probs().t();
    for (int k = 0; k < 4; ++k) take(tg::multinomial(p, 1));
  } else if (id == "multinomial_slice_3x10_step2_x4") {
    const Tensor p = every_other_column(probs());
    for (int k = 0; k < 4; ++k) take(tg::multinomial(p, 1));
  } else {
    throw std::runtime_error("no recipe for random_ops_torch.json vector " + id);
  }
  return out;
}

void replay_noncontiguous(const Value& vector, Tally& tally) {
  tg::manual_seed(tg_test::integer_bits(vector["seed"]));
  ValueKind kind = ValueKind::Integer;
  std::vector<uint64_t> actual = noncontiguous_recipe(vector, kind);
  const Value& values = vector["values"];
  std::vector<ExpectedValue> expected;
  for (size_t i = 0; i < values.size(); ++i) {
    expected.push_back({static_cast<int64_t>(i), kind == ValueKind::Integer
                                                     ? tg_test::integer_bits(values[i])
                                                     : tg_test::parse_hex(values[i].as_string())});
  }
  tg_test::compare_values(vector["id"].as_string(), kind, actual, static_cast<int64_t>(values.size()),
                          expected, tally);
}

// Replay one family of rng_golden.json + rng_torch.json ("" = all) through the tensor API.
Tally replay_family_through_tensors(const std::string& family) {
  Tally tally;
  for (const Value& v : tg_test::golden_file()["vectors"].as_array()) {
    if (family.empty() || tg_test::golden_family(v) == family) replay_golden_through_tensors(v, tally);
  }
  for (const Value& v : tg_test::torch_file()["vectors"].as_array()) {
    if (family.empty() || tg_test::torch_family(v) == family) replay_torch_through_tensors(v, tally);
  }
  return tally;
}

void replay(const std::string& family, int at_least) {
  Tally tally = replay_family_through_tensors(family);
  EXPECT_GE(tally.vectors, at_least) << "family " << family;
}

// ---- bit-exact through the tensor API, family by family ------------------------------------------

TEST(RandomOps, RandAndUniformMatchTorchBitForBit) { replay("uniform", 10); }
TEST(RandomOps, RandnScalarPathMatchesTorchBitForBit) { replay("normal_f32_scalar", 15); }
TEST(RandomOps, RandnBlockPathMatchesTorchBitForBit) { replay("normal_f32_block", 25); }
TEST(RandomOps, RandnFloat64MatchesTorchBitForBit) { replay("normal_f64", 30); }
TEST(RandomOps, CachedNormalCarriesAcrossTensorCalls) { replay("sequence", 8); }
TEST(RandomOps, RandintAndRandpermMatchTorch) { replay("integers", 15); }
TEST(RandomOps, BernoulliAndDropoutMatchTorchBitForBit) { replay("bernoulli_dropout", 8); }
TEST(RandomOps, MultinomialAndExponentialMatchTorch) { replay("multinomial_exponential", 8); }
TEST(RandomOps, LinearAndEmbeddingInitMatchTorchBitForBit) { replay("module_init", 8); }
TEST(RandomOps, EngineStateAfterTensorCallsMatchesTorch) { replay("engine_state", 9); }

TEST(RandomOps, NonContiguousTensorsMatchTorchBitForBit) {
  Tally tally;
  for (const Value& v : random_ops_file()["vectors"].as_array()) replay_noncontiguous(v, tally);
  EXPECT_EQ(tally.vectors, 20);
}

TEST(RandomOps, EveryReferenceVectorIsComparedThroughTheTensorApi) {
  Tally tally = replay_family_through_tensors("");
  Tally noncontiguous;
  for (const Value& v : random_ops_file()["vectors"].as_array()) replay_noncontiguous(v, noncontiguous);
  const size_t golden = tg_test::golden_file()["vectors"].size();
  const size_t from_torch = tg_test::torch_file()["vectors"].size();
  EXPECT_EQ(static_cast<size_t>(tally.vectors), golden + from_torch);
  std::printf("[ random ops ] through the tensor API: %d vectors (%zu golden + %zu rng_torch) with "
              "%lld values bit-exact and %lld get_rng_state() bytes equal; plus %d non-contiguous "
              "vectors with %lld values bit-exact\n",
              tally.vectors, golden, from_torch, static_cast<long long>(tally.values),
              static_cast<long long>(tally.state_bytes), noncontiguous.vectors,
              static_cast<long long>(noncontiguous.values));
}

// ---- element order and paths (§4.1, §10), checked against the kernels directly ------------------

TEST(RandomOps, TransposedUniformFillsStorageInAddressOrder) {
  Generator a(3), b(3);
  Tensor base = tg::empty({4, 6});
  base.t().uniform_(0.0, 1.0, &a);  // the view (6,4) has strides (1,6)
  EXPECT_EQ(bits_of(base), bits_of(tg::rand({4, 6}, &b)));  // storage 0..23 gets draws 0..23
}

TEST(RandomOps, NonContiguousRandnOfSixteenOrMoreTakesTheScalarPath) {
  Generator a(11), b(11);
  Tensor base = tg::empty({8, 8});
  every_other_column(base).normal_(0.0, 1.0, &a);  // 32 elements, not contiguous
  Tensor view = every_other_column(base);
  std::vector<float> scalar_path(32);
  for (float& v : scalar_path) v = static_cast<float>(tg::rng::normal_scale(tg::rng::normal_scalar(b), 0.0, 1.0));
  std::vector<float> got = view.tolist<float>();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(scalar_path[i])) << "element " << i;
  }
  // The contiguous copy of the same shape takes the block path, so the values differ.
  Generator c(11);
  EXPECT_NE(bits_of(tg::randn({8, 4}, &c)), bits_of(view));
}

TEST(RandomOps, RandLikeKeepsATransposedLayoutAsTorchEmptyLikeDoes) {
  Tensor t = tg::empty({4, 6}).t();
  Tensor r = tg::randn_like(t);
  EXPECT_EQ(r.sizes(), (Shape{6, 4}));
  EXPECT_EQ(r.strides(), (Shape{1, 6}));
  EXPECT_FALSE(r.requires_grad());
  Tensor s = tg::rand_like(every_other_column(tg::empty({4, 6}, tg::kFloat64)));
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s.dtype(), tg::kFloat64);
}

TEST(RandomOps, MultinomialGivesOneIndexPerRow) {
  Generator gen(1);
  Tensor one = tg::multinomial(tg::tensor({0.0f, 0.0f, 1.0f}), 1, &gen);
  EXPECT_EQ(one.sizes(), (Shape{1}));
  EXPECT_EQ(one.dtype(), tg::kInt64);
  EXPECT_EQ(one.item<int64_t>(), 2);
  Tensor rows = tg::multinomial(tg::tensor({{1.0, 0.0}, {0.0, 1.0}, {0.0, 2.0}}, tg::kFloat64), 1, &gen);
  EXPECT_EQ(rows.sizes(), (Shape{3, 1}));
  EXPECT_EQ(rows.tolist<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
}

// ---- threads, generator state -------------------------------------------------------------------

// A mix of every op, all on one generator; returns every value as bits.
std::vector<uint64_t> workload(Generator& g) {
  std::vector<uint64_t> all;
  ValueKind kind;
  auto take = [&](const Tensor& t) { append_tensor_bits(all, t, kind); };
  take(tg::randn({3}, &g));  // leaves a cached normal
  take(tg::randn({1000}, &g));
  take(tg::randn({33}, &g, tg::kFloat64));
  take(tg::rand({17, 5}, &g));
  take(tg::randint(0, 50257, {64}, &g));
  take(tg::randperm(100, &g));
  take(tg::multinomial(tg::softmax(tg::randn({4, 50}, &g), 1), 1, &g));
  take(tg::empty({6, 8}).t().normal_(0.0, 1.0, &g));
  take(tg::empty({200}).bernoulli_(0.3, &g));
  take(tg::empty({50}, tg::kFloat64).exponential_(2.5, &g));
  take(tg::dropout(tg::ones({100}), 0.1, true, &g));
  return all;
}

TEST(RandomOps, ResultsDoNotDependOnTheNumberOfThreads) {
  const int before = tg::get_num_threads();
  tg::set_num_threads(1);
  Generator one(77);
  const std::vector<uint64_t> with_one = workload(one);
  tg::set_num_threads(2);
  Generator two(77);
  const std::vector<uint64_t> with_two = workload(two);
  tg::set_num_threads(before);
  EXPECT_EQ(with_one, with_two);

  // Also the same work in two threads at once, each with its own generator.
  std::vector<uint64_t> in_thread[2];
  std::thread workers[2];
  for (int k = 0; k < 2; ++k) {
    workers[k] = std::thread([&, k] {
      tg::NoGradGuard no_grad;
      Generator g(77);
      in_thread[k] = workload(g);
    });
  }
  for (std::thread& w : workers) w.join();
  EXPECT_EQ(in_thread[0], with_one);
  EXPECT_EQ(in_thread[1], with_one);
}

TEST(RandomOps, CopiedGeneratorReplaysTheSameTensorsIncludingTheCachedNormal) {
  Generator gen(2024);
  tg::randn({3}, &gen);  // pair A, A, B: B's sin stays cached
  ASSERT_TRUE(gen.next_double_normal().has_value());
  Generator saved = gen;
  const std::vector<uint64_t> first = workload(gen);
  gen = saved;
  EXPECT_EQ(workload(gen), first);
  // The first randn of the replay starts with the cached value (a scalar-path call).
  gen = saved;
  Generator fresh(2024);
  tg::randn({3}, &fresh);
  EXPECT_EQ(bits_of(tg::randn({1}, &gen)), bits_of(tg::randn({1}, &fresh)));
}

TEST(RandomOps, GetStateAndSetStateBytesRestoreTheDefaultGenerator) {
  tg::manual_seed(31);
  tg::randn({5});  // leaves a cached normal
  const std::vector<uint8_t> state = tg::default_generator().get_state();
  const std::vector<uint64_t> a = bits_of(tg::randn({7}));
  const std::vector<uint64_t> b = bits_of(tg::rand({40}));
  tg::randint(0, 10, {1000});
  tg::default_generator().set_state(state);
  EXPECT_EQ(bits_of(tg::randn({7})), a);
  EXPECT_EQ(bits_of(tg::rand({40})), b);
  // The same bytes loaded into a separate generator.
  Generator other;
  other.set_state(state);
  EXPECT_EQ(bits_of(tg::randn({7}, &other)), a);
}

// ---- in place: versions and autograd ------------------------------------------------------------

TEST(RandomOps, InPlaceFillsBumpTheVersionAndFactoriesStartAtZero) {
  Tensor t = tg::rand({4});
  EXPECT_EQ(t._version(), 0u);
  t.uniform_();
  t.normal_();
  t.bernoulli_(0.5);
  t.exponential_();
  t.random_(0, 10);
  EXPECT_EQ(t._version(), 5u);
  EXPECT_EQ(tg::randn({20})._version(), 0u);
}

TEST(RandomOps, InPlaceFillRefusesALeafThatRequiresGrad) {
  Tensor w = tg::empty({3}).requires_grad_();
  EXPECT_EQ(error_of([&] { w.uniform_(); }),
            "uniform_: a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_EQ(error_of([&] { w.normal_(); }),
            "normal_: a leaf Variable that requires grad is being used in an in-place operation.");
  {
    tg::NoGradGuard no_grad;
    w.normal_();  // allowed, as under torch.no_grad()
  }
  EXPECT_EQ(w._version(), 1u);
  EXPECT_TRUE(w.requires_grad());
}

TEST(RandomOps, InPlaceFillOfANonLeafCutsTheGradient) {
  Tensor x = tg::ones({3}).requires_grad_();
  Tensor y = x * 2.0;
  y.uniform_();
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_EQ(y.grad_fn()->name, "UniformBackward0");
  y.sum().backward();
  if (x.grad().defined()) {
    for (float g : x.grad().tolist<float>()) EXPECT_EQ(g, 0.0f);
  }
}

// ---- argument errors: named op and value, and no draws ------------------------------------------

TEST(RandomOps, BadArgumentsAreRejectedWithTheOpAndValueBeforeAnyDraw) {
  Generator gen(5);
  Tensor f = tg::empty({4});
  Tensor i = tg::empty({4}, tg::kInt64);
  EXPECT_EQ(error_of([&] { tg::randint(5, 3, {2}, &gen); }), "randint: low (5) must be less than high (3)");
  EXPECT_EQ(error_of([&] { f.bernoulli_(1.5, &gen); }), "bernoulli_: p must be in [0, 1], got 1.5");
  EXPECT_EQ(error_of([&] { f.normal_(0.0, -1.0, &gen); }), "normal_: std must be >= 0, got -1");
  EXPECT_EQ(error_of([&] { f.uniform_(2.0, 1.0, &gen); }), "uniform_: from (2) must be <= to (1)");
  EXPECT_EQ(error_of([&] { f.exponential_(-1.0, &gen); }), "exponential_: lambda must be >= 0, got -1");
  EXPECT_EQ(error_of([&] { f.random_(3, 3, &gen); }), "random_: low (3) must be less than high (3)");
  EXPECT_EQ(error_of([&] { tg::randperm(-3, &gen); }), "randperm: n must be >= 0, got -3");
  EXPECT_EQ(error_of([&] { i.uniform_(0.0, 1.0, &gen); }),
            "uniform_: expected a floating point tensor (float32 or float64), got int64");
  EXPECT_EQ(error_of([&] { i.normal_(0.0, 1.0, &gen); }),
            "normal_: expected a floating point tensor (float32 or float64), got int64");
  EXPECT_EQ(error_of([&] { i.exponential_(1.0, &gen); }),
            "exponential_: expected a floating point tensor (float32 or float64), got int64");
  EXPECT_EQ(error_of([&] { tg::rand({2}, &gen, tg::kInt64); }), "rand: dtype must be float32 or float64, got int64");
  EXPECT_EQ(error_of([&] { tg::randn({2}, &gen, tg::kBool); }), "randn: dtype must be float32 or float64, got bool");
  EXPECT_EQ(error_of([&] { tg::randn_like(i, &gen); }), "randn_like: dtype must be float32 or float64, got int64");
  EXPECT_NE(error_of([&] { f.uniform_(-3e38, 3e38, &gen); }).find("uniform_: to - from overflows float32"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f.random_(0, (int64_t{1} << 24) + 2, &gen); }).find("random_: low (0) and high - 1 (16777217)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tg::empty({1, 4}).expand({3, 4}).uniform_(0.0, 1.0, &gen); })
                .find("uniform_: unsupported operation: more than one element of the written-to tensor refers to a single memory location"),
            std::string::npos);
  Tensor probs = tg::tensor({0.5f, 0.5f});
  EXPECT_EQ(error_of([&] { tg::multinomial(probs, 3, &gen); }),
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement (3 samples, 2 "
            "categories)");
  EXPECT_EQ(error_of([&] { tg::multinomial(probs, 0, &gen); }), "multinomial: num_samples must be positive, got 0");
  EXPECT_EQ(error_of([&] { tg::multinomial(tg::empty({2, 2, 2}), 1, &gen); }),
            "multinomial: probs must be 1-d or 2-d, got shape (2,2,2)");
  EXPECT_EQ(error_of([&] { tg::multinomial(tg::tensor({0.5f, -0.25f}), 1, &gen); }),
            "multinomial: probability tensor contains either inf, nan or element < 0 (row 0, element 1 is -0.25)");
  EXPECT_EQ(error_of([&] { tg::multinomial(tg::tensor({{1.0f, 0.0f}, {0.0f, 0.0f}}), 1, &gen); }),
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0) in row 1");
  EXPECT_EQ(error_of([&] { tg::multinomial(tg::tensor({1, 2}), 1, &gen); }),
            "multinomial: expected a floating point tensor (float32 or float64), got int64");
  // None of the rejected calls drew anything.
  Generator fresh(5);
  EXPECT_EQ(gen.random(), fresh.random());
  EXPECT_EQ(f._version(), 0u);
}

TEST(RandomOps, NullGeneratorMeansTheDefaultGenerator) {
  tg::manual_seed(8);
  const std::vector<uint64_t> a = bits_of(tg::randn({20}));
  Generator g(8);
  EXPECT_EQ(bits_of(tg::randn({20}, &g)), a);
}

}  // namespace
