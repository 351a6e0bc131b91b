// tests/autograd/rng_replay.h — replays PyTorch's reference random numbers through tg::rng.
//
// Two data files, both in TG_REFERENCE_DIR (tests/reference):
//   rng_golden.json  39 golden vectors of PyTorch 1.13's generator (first 8 and last 8 values of each call);
//   rng_torch.json   full outputs made by make_rng_reference.py (its docstring gives the format).
// For each vector we seed a fresh Generator, make the same calls the way the tensor layer will
// (the ops_* functions below: one kernel call per element in row-major order, or one block fill),
// and compare every value bit for bit: float32 bits, float64 bits, integers, or the bytes of
// torch.get_rng_state(). A mismatch names the vector, the element and both values.
#pragma once
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/random/generator.h"
#include "io/json.h"
#include "autograd/random/random_kernels.h"

#ifndef TG_REFERENCE_DIR
#define TG_REFERENCE_DIR "tests/reference"
#endif

namespace tg_test {

namespace rng = tg::rng;
using tg::Generator;
using tg::json::Value;

// ---- The tensor layer's use of the kernels, for contiguous tensors of n elements -------------

inline std::vector<float> ops_uniform_f32(Generator& gen, int64_t n, double a, double b) {
  rng::UniformF32 params = rng::uniform_params_f32(a, b);
  std::vector<float> out(n);
  for (float& v : out) v = rng::uniform_f32(gen, params.lo, params.range);
  return out;
}

inline std::vector<double> ops_uniform_f64(Generator& gen, int64_t n, double a, double b) {
  rng::UniformF64 params = rng::uniform_params_f64(a, b);
  std::vector<double> out(n);
  for (double& v : out) v = rng::uniform_f64(gen, params.lo, params.range);
  return out;
}

inline std::vector<float> ops_normal_f32(Generator& gen, int64_t n, double mean, double std) {
  std::vector<float> out(n);
  if (rng::normal_uses_block_path(n, /*contiguous=*/true)) {
    rng::normal_fill_f32(gen, out.data(), n, mean, std);
  } else {
    for (float& v : out) v = static_cast<float>(rng::normal_scale(rng::normal_scalar(gen), mean, std));
  }
  return out;
}

inline std::vector<double> ops_normal_f64(Generator& gen, int64_t n, double mean, double std) {
  std::vector<double> out(n);
  if (rng::normal_uses_block_path(n, /*contiguous=*/true)) {
    rng::normal_fill_f64(gen, out.data(), n, mean, std);
  } else {
    for (double& v : out) v = rng::normal_scale(rng::normal_scalar(gen), mean, std);
  }
  return out;
}

inline std::vector<int64_t> ops_randint(Generator& gen, int64_t n, int64_t low, int64_t high) {
  std::vector<int64_t> out(n);
  for (int64_t& v : out) v = rng::randint_one(gen, low, high);
  return out;
}

inline std::vector<int64_t> ops_randperm(Generator& gen, int64_t n) {
  std::vector<int64_t> out(n);
  rng::randperm_fill(gen, out.data(), n);
  return out;
}

template <typename T>
std::vector<T> ops_bernoulli(Generator& gen, int64_t n, double p) {
  std::vector<T> out(n);
  for (T& v : out) v = rng::bernoulli_one(gen, p) ? T(1) : T(0);
  return out;
}

// F.dropout(x, p, training=True) on float32.
inline std::vector<float> ops_dropout(Generator& gen, const std::vector<float>& x, double p) {
  if (p == 0.0) return x;
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = p == 1.0 ? x[i] * 0.0f : x[i] * rng::dropout_noise_one(gen, p);
  }
  return out;
}

inline std::vector<float> ops_exponential_f32(Generator& gen, int64_t n, double lambda) {
  std::vector<float> out(n);
  for (float& v : out) v = static_cast<float>(rng::exponential_one(gen, lambda));
  return out;
}

inline std::vector<double> ops_exponential_f64(Generator& gen, int64_t n, double lambda) {
  std::vector<double> out(n);
  for (double& v : out) v = rng::exponential_one(gen, lambda);
  return out;
}

// nn.Linear(in, out, bias): weight (out x in) then bias (out), as one flat list.
inline std::vector<float> ops_linear_init(Generator& gen, int64_t in, int64_t out, bool bias) {
  double bound = rng::kaiming_uniform_bound(in);
  std::vector<float> values = ops_uniform_f32(gen, out * in, -bound, bound);
  if (bias) {
    double bias_bound = rng::linear_bias_bound(in);
    std::vector<float> b = ops_uniform_f32(gen, out, -bias_bound, bias_bound);
    values.insert(values.end(), b.begin(), b.end());
  }
  return values;
}

// ---- Values as bits -------------------------------------------------------------------------

enum class ValueKind { Float32, Float64, Integer };

inline void append_bits(std::vector<uint64_t>& out, const std::vector<float>& v) {
  for (float x : v) out.push_back(std::bit_cast<uint32_t>(x));
}
inline void append_bits(std::vector<uint64_t>& out, const std::vector<double>& v) {
  for (double x : v) out.push_back(std::bit_cast<uint64_t>(x));
}
inline void append_bits(std::vector<uint64_t>& out, const std::vector<int64_t>& v) {
  for (int64_t x : v) out.push_back(static_cast<uint64_t>(x));
}

inline uint64_t parse_hex(const std::string& text) {
  size_t used = 0;
  uint64_t v = std::stoull(text, &used, 16);  // accepts a 0x prefix
  if (used != text.size()) throw std::runtime_error("bad hex value in reference data: " + text);
  return v;
}

// An integer that may be negative (int64) or above 2^63 (uint64), as its 64 bits.
inline uint64_t integer_bits(const Value& v) {
  const std::string& text = v.number_text();
  return text[0] == '-' ? static_cast<uint64_t>(v.as_int64()) : v.as_uint64();
}

inline std::string show_value(ValueKind kind, uint64_t bits) {
  std::ostringstream s;
  if (kind == ValueKind::Integer) {
    s << static_cast<int64_t>(bits);
    if (static_cast<int64_t>(bits) < 0) s << " (uint64 " << bits << ")";
    return s.str();
  }
  s << "0x" << std::hex << bits << std::dec << " (";
  if (kind == ValueKind::Float32) {
    s.precision(9);
    s << std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else {
    s.precision(17);
    s << std::bit_cast<double>(bits);
  }
  s << ")";
  return s.str();
}

struct Tally {
  int vectors = 0;          // vectors compared
  int64_t values = 0;       // values found bit-exact
  int64_t state_bytes = 0;  // get_rng_state() bytes found equal
};

// One expected value: its element index in the vector's output and its bits.
struct ExpectedValue {
  int64_t index;
  uint64_t bits;
};

// Compare actual[index] with each expected value; report at most 5 mismatches loudly.
inline void compare_values(const std::string& id, ValueKind kind, const std::vector<uint64_t>& actual,
                           int64_t expected_count, const std::vector<ExpectedValue>& expected,
                           Tally& tally) {
  ++tally.vectors;
  if (static_cast<int64_t>(actual.size()) != expected_count) {
    ADD_FAILURE() << "vector " << id << ": produced " << actual.size() << " values, torch gave "
                  << expected_count;
    return;
  }
  int mismatches = 0;
  for (const ExpectedValue& e : expected) {
    uint64_t got = actual[e.index];
    if (got == e.bits) {
      ++tally.values;
      continue;
    }
    if (++mismatches <= 5) {
      ADD_FAILURE() << "vector " << id << ", element " << e.index << ": torch "
                    << show_value(kind, e.bits) << ", ours " << show_value(kind, got);
    }
  }
  if (mismatches > 5) {
    ADD_FAILURE() << "vector " << id << ": " << mismatches << " of " << expected.size()
                  << " values differ (first 5 shown above)";
  }
}

// ---- The reference files --------------------------------------------------------------------

inline const Value& golden_file() {
  static const Value file = tg::json::parse_file(std::string(TG_REFERENCE_DIR) + "/rng_golden.json");
  return file;
}

inline const Value& torch_file() {
  static const Value file = tg::json::parse_file(std::string(TG_REFERENCE_DIR) + "/rng_torch.json");
  return file;
}

// Seed as torch.manual_seed does: a negative seed wraps to uint64.
inline Generator seeded_generator(const Value& seed) { return Generator(integer_bits(seed)); }

// ---- Golden vectors: a recipe per id ----------------------------------------------------------

// Families group vectors into named tests; every vector belongs to exactly one.
inline std::string golden_family(const Value& vector) {
  const std::string& id = vector["id"].as_string();
  auto starts = [&](const char* prefix) { return id.rfind(prefix, 0) == 0; };
  if (starts("engine_")) return "engine";
  if (starts("rand_") || starts("uniform_")) return "uniform";
  if (starts("randn_seq")) return "sequence";
  if (starts("randn_f32") || starts("normal_f32")) {
    return vector["numel"].as_int64() < 16 ? "normal_f32_scalar" : "normal_f32_block";
  }
  if (starts("randn_f64")) return "normal_f64";
  if (starts("randint") || starts("randperm")) return "integers";
  if (starts("bernoulli") || starts("dropout")) return "bernoulli_dropout";
  if (starts("multinomial") || starts("exponential")) return "multinomial_exponential";
  if (starts("linear") || starts("embedding")) return "module_init";
  return "unknown";
}

// The calls each golden vector records (its "call" field, in C++), returning all values as bits.
inline std::vector<uint64_t> golden_recipe(const std::string& id, Generator& gen, ValueKind& kind) {
  std::vector<uint64_t> out;
  auto f32 = [&](const std::vector<float>& v) { kind = ValueKind::Float32; append_bits(out, v); };
  auto f64 = [&](const std::vector<double>& v) { kind = ValueKind::Float64; append_bits(out, v); };
  auto ints = [&](const std::vector<int64_t>& v) { kind = ValueKind::Integer; append_bits(out, v); };

  if (id.rfind("engine_u32_", 0) == 0) {
    kind = ValueKind::Integer;
    for (int i = 0; i < 8; ++i) out.push_back(gen.random());
  } else if (id.rfind("engine_u64_", 0) == 0) {
    kind = ValueKind::Integer;
    for (int i = 0; i < 8; ++i) out.push_back(gen.random64());
  } else if (id == "rand_3x2_seed123") {
    f32(ops_uniform_f32(gen, 6, 0.0, 1.0));
  } else if (id == "rand_3x2_x3_seed123") {
    for (int call = 0; call < 3; ++call) f32(ops_uniform_f32(gen, 6, 0.0, 1.0));
  } else if (id == "rand_f32_1000_seed0") {
    f32(ops_uniform_f32(gen, 1000, 0.0, 1.0));
  } else if (id == "rand_f64_10_seed0") {
    f64(ops_uniform_f64(gen, 10, 0.0, 1.0));
  } else if (id == "uniform_f32_seed7") {
    f32(ops_uniform_f32(gen, 100, -0.1, 0.35));
  } else if (id == "randn_f32_4x8x2_seed42") {
    f32(ops_normal_f32(gen, 64, 0.0, 1.0));
  } else if (id == "randn_f32_5_seed0") {
    f32(ops_normal_f32(gen, 5, 0.0, 1.0));
  } else if (id == "randn_f32_15_seed0") {
    f32(ops_normal_f32(gen, 15, 0.0, 1.0));
  } else if (id == "randn_f32_16_seed0") {
    f32(ops_normal_f32(gen, 16, 0.0, 1.0));
  } else if (id == "randn_f32_17_seed0") {
    f32(ops_normal_f32(gen, 17, 0.0, 1.0));
  } else if (id == "randn_f32_100_seed0") {
    f32(ops_normal_f32(gen, 100, 0.0, 1.0));
  } else if (id == "randn_f32_1000_seed0") {
    f32(ops_normal_f32(gen, 1000, 0.0, 1.0));
  } else if (id == "randn_f32_3x4_seed1") {
    f32(ops_normal_f32(gen, 12, 0.0, 1.0));
  } else if (id == "randn_f64_5_seed0") {
    f64(ops_normal_f64(gen, 5, 0.0, 1.0));
  } else if (id == "randn_f64_16_seed0") {
    f64(ops_normal_f64(gen, 16, 0.0, 1.0));
  } else if (id == "randn_f64_17_seed0") {
    f64(ops_normal_f64(gen, 17, 0.0, 1.0));
  } else if (id == "randn_seq_seed3") {
    f32(ops_normal_f32(gen, 3, 0.0, 1.0));
    f32(ops_normal_f32(gen, 5, 0.0, 1.0));
  } else if (id == "normal_f32_100_seed31") {
    f32(ops_normal_f32(gen, 100, 0.3, 2.5));
  } else if (id == "normal_f32_7_seed31") {
    f32(ops_normal_f32(gen, 7, 0.3, 2.5));
  } else if (id == "randint_0_10_seed0") {
    ints(ops_randint(gen, 16, 0, 10));
  } else if (id == "randint_0_50257_seed0") {
    ints(ops_randint(gen, 16, 0, 50257));
  } else if (id == "randint_-5_7_seed0") {
    ints(ops_randint(gen, 16, -5, 7));
  } else if (id == "randint_0_1099511627776_seed0") {
    ints(ops_randint(gen, 16, 0, 1099511627776));
  } else if (id == "randperm_8_seed0") {
    ints(ops_randperm(gen, 8));
  } else if (id == "randperm_10_seed0") {
    ints(ops_randperm(gen, 10));
  } else if (id == "bernoulli_f32_p0.5_seed8") {
    f32(ops_bernoulli<float>(gen, 16, 0.5));
  } else if (id == "dropout_ones_p0.1_seed9") {
    f32(ops_dropout(gen, std::vector<float>(16, 1.0f), 0.1));
  } else if (id == "dropout_ones_p0.15_seed9") {
    f32(ops_dropout(gen, std::vector<float>(16, 1.0f), 0.15));
  } else if (id == "multinomial_seq_seed0") {
    const float probs[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    std::vector<int64_t> picks;
    for (int call = 0; call < 8; ++call) picks.push_back(rng::multinomial_row_f32(gen, probs, 4));
    ints(picks);
  } else if (id == "exponential_f32_seed0") {
    f32(ops_exponential_f32(gen, 8, 1.0));
  } else if (id == "linear_4x3_seed0") {
    f32(ops_linear_init(gen, 4, 3, true));
  } else if (id == "embedding_10x4_seed0") {
    f32(ops_normal_f32(gen, 40, 0.0, 1.0));
  } else if (id == "embedding_3x5_seed0") {
    f32(ops_normal_f32(gen, 15, 0.0, 1.0));
  } else {
    throw std::runtime_error("no C++ recipe for golden vector " + id);
  }
  return out;
}

// Expected bits of one golden value: {hex: ...} for floats, a plain number for integers.
inline uint64_t golden_value_bits(const Value& v) {
  return v.is_object() ? parse_hex(v["hex"].as_string()) : integer_bits(v);
}

inline void replay_golden_vector(const Value& vector, Tally& tally) {
  const std::string& id = vector["id"].as_string();
  Generator gen = seeded_generator(vector["seed"]);
  ValueKind kind = ValueKind::Integer;
  std::vector<uint64_t> actual = golden_recipe(id, gen, kind);
  int64_t numel = vector["numel"].as_int64();
  std::vector<ExpectedValue> expected;
  const Value& first8 = vector["first8"];
  for (size_t k = 0; k < first8.size(); ++k) {
    expected.push_back({static_cast<int64_t>(k), golden_value_bits(first8[k])});
  }
  if (const Value* last8 = vector.find("last8")) {
    for (size_t k = 0; k < last8->size(); ++k) {
      int64_t index = numel - static_cast<int64_t>(last8->size()) + static_cast<int64_t>(k);
      expected.push_back({index, golden_value_bits((*last8)[k])});
    }
  }
  compare_values(id, kind, actual, numel, expected, tally);
}

// ---- rng_torch.json: calls described in the file ----------------------------------------------

inline int64_t numel_of(const Value& shape) {
  int64_t n = 1;
  for (const Value& d : shape.as_array()) n *= d.as_int64();
  return n;
}

inline bool produces_values(const std::string& op) {
  return op != "manual_seed" && op != "draws" && op != "get_state";
}

inline std::string torch_family(const Value& vector) {
  if (vector["kind"].as_string() == "state") return "engine_state";
  const Value& calls = vector["calls"];
  int producing = 0;
  for (const Value& call : calls.as_array()) {
    if (!produces_values(call["op"].as_string())) return "sequence";
    ++producing;
  }
  if (producing != 1) return "sequence";
  const Value& call = calls[0];
  const std::string& op = call["op"].as_string();
  if (op == "normal") {
    if (call["dtype"].as_string() == "float64") return "normal_f64";
    return numel_of(call["shape"]) < 16 ? "normal_f32_scalar" : "normal_f32_block";
  }
  if (op == "uniform") return "uniform";
  if (op == "randint" || op == "randperm") return "integers";
  if (op == "bernoulli" || op == "dropout") return "bernoulli_dropout";
  if (op == "multinomial" || op == "exponential") return "multinomial_exponential";
  if (op == "linear" || op == "embedding") return "module_init";
  return "unknown";
}

template <typename T>
std::vector<T> probs_from_bits(const Value& row) {
  std::vector<T> probs;
  for (const Value& bits : row.as_array()) {
    uint64_t b = parse_hex(bits.as_string());
    if constexpr (sizeof(T) == 4) {
      probs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
    } else {
      probs.push_back(std::bit_cast<double>(b));
    }
  }
  return probs;
}

// Run one described call; append what it returns (if anything) to out.
inline void run_torch_call(const Value& call, Generator& gen, std::vector<uint64_t>& out) {
  const std::string& op = call["op"].as_string();
  auto is_f64 = [&] { return call["dtype"].as_string() == "float64"; };
  if (op == "normal") {
    int64_t n = numel_of(call["shape"]);
    double mean = call["mean"].as_double(), std = call["std"].as_double();
    if (is_f64()) append_bits(out, ops_normal_f64(gen, n, mean, std));
    else append_bits(out, ops_normal_f32(gen, n, mean, std));
  } else if (op == "uniform") {
    int64_t n = numel_of(call["shape"]);
    double a = call["low"].as_double(), b = call["high"].as_double();
    if (is_f64()) append_bits(out, ops_uniform_f64(gen, n, a, b));
    else append_bits(out, ops_uniform_f32(gen, n, a, b));
  } else if (op == "randint") {
    append_bits(out, ops_randint(gen, numel_of(call["shape"]), call["low"].as_int64(),
                                 call["high"].as_int64()));
  } else if (op == "randperm") {
    append_bits(out, ops_randperm(gen, call["n"].as_int64()));
  } else if (op == "bernoulli") {
    int64_t n = numel_of(call["shape"]);
    double p = call["p"].as_double();
    if (is_f64()) append_bits(out, ops_bernoulli<double>(gen, n, p));
    else append_bits(out, ops_bernoulli<float>(gen, n, p));
  } else if (op == "dropout") {
    int64_t n = numel_of(call["shape"]);
    std::vector<float> x = call["input"].as_string() == "ones" ? std::vector<float>(n, 1.0f)
                                                               : ops_normal_f32(gen, n, 0.0, 1.0);
    append_bits(out, ops_dropout(gen, x, call["p"].as_double()));
  } else if (op == "exponential") {
    int64_t n = numel_of(call["shape"]);
    double lambda = call["lambda"].as_double();
    if (is_f64()) append_bits(out, ops_exponential_f64(gen, n, lambda));
    else append_bits(out, ops_exponential_f32(gen, n, lambda));
  } else if (op == "multinomial") {
    const Value& rows = call["probs_bits"];
    int64_t repeat = call["repeat"].as_int64();
    int64_t row_count = static_cast<int64_t>(rows.size());
    int64_t width = static_cast<int64_t>(rows[0].size());
    std::vector<int64_t> picks(row_count);
    std::vector<float> probs_f32;
    std::vector<double> probs_f64;
    for (const Value& row : rows.as_array()) {
      if (is_f64()) {
        std::vector<double> r = probs_from_bits<double>(row);
        probs_f64.insert(probs_f64.end(), r.begin(), r.end());
      } else {
        std::vector<float> r = probs_from_bits<float>(row);
        probs_f32.insert(probs_f32.end(), r.begin(), r.end());
      }
    }
    for (int64_t k = 0; k < repeat; ++k) {
      if (is_f64()) rng::multinomial_rows_f64(gen, picks.data(), probs_f64.data(), row_count, width);
      else rng::multinomial_rows_f32(gen, picks.data(), probs_f32.data(), row_count, width);
      append_bits(out, picks);
    }
  } else if (op == "linear") {
    append_bits(out, ops_linear_init(gen, call["in"].as_int64(), call["out"].as_int64(),
                                     call["bias"].as_bool()));
  } else if (op == "embedding") {
    append_bits(out, ops_normal_f32(gen, call["num"].as_int64() * call["dim"].as_int64(), 0.0, 1.0));
  } else if (op == "manual_seed") {
    gen.manual_seed(integer_bits(call["seed"]));
  } else if (op == "draws") {
    ops_uniform_f32(gen, call["n"].as_int64(), 0.0, 1.0);
  } else if (op == "get_state") {
    // handled by replay_torch_vector
  } else {
    throw std::runtime_error("rng_torch.json: unknown op " + op);
  }
}

// Names the get_rng_state() field a byte offset falls in, for failure messages.
inline std::string state_field(size_t offset) {
  if (offset < 8) return "seed";
  if (offset < 12) return "left";
  if (offset < 16) return "seeded";
  if (offset < 24) return "next";
  if (offset < 5016) return "state word " + std::to_string((offset - 24) / 8);
  if (offset < 5024) return "normal_x";
  if (offset < 5032) return "normal_y";
  if (offset < 5040) return "normal_rho";
  if (offset < 5044) return "normal_is_valid";
  if (offset < 5048) return "next_float_normal";
  if (offset < 5049) return "next_float_normal_is_valid";
  return "padding";
}

inline void replay_torch_vector(const Value& vector, Tally& tally) {
  const std::string& id = vector["id"].as_string();
  Generator gen = seeded_generator(vector["seed"]);
  EXPECT_EQ(gen.initial_seed(), vector["initial_seed"].as_uint64()) << "vector " << id;
  std::vector<uint64_t> actual;
  for (const Value& call : vector["calls"].as_array()) run_torch_call(call, gen, actual);

  const std::string& kind_name = vector["kind"].as_string();
  const Value& values = vector["values"];
  std::vector<ExpectedValue> expected;
  ValueKind kind = ValueKind::Integer;
  if (kind_name == "state") {
    // Compare every byte of our get_state() with torch.get_rng_state().
    std::vector<uint8_t> ours = gen.get_state();
    const std::string& hex = values[0].as_string();
    ++tally.vectors;
    if (ours.size() * 2 != hex.size()) {
      ADD_FAILURE() << "vector " << id << ": get_state() gave " << ours.size()
                    << " bytes, torch.get_rng_state() " << hex.size() / 2;
      return;
    }
    for (size_t i = 0; i < ours.size(); ++i) {
      uint64_t theirs = parse_hex(hex.substr(2 * i, 2));
      if (ours[i] != theirs) {
        ADD_FAILURE() << "vector " << id << ": get_state() byte " << i << " (" << state_field(i)
                      << ") is " << int(ours[i]) << ", torch.get_rng_state() has " << theirs;
        return;
      }
    }
    tally.state_bytes += static_cast<int64_t>(ours.size());
    return;
  }
  if (kind_name == "float32") kind = ValueKind::Float32;
  if (kind_name == "float64") kind = ValueKind::Float64;
  for (size_t i = 0; i < values.size(); ++i) {
    uint64_t bits = kind == ValueKind::Integer ? integer_bits(values[i])
                                               : parse_hex(values[i].as_string());
    expected.push_back({static_cast<int64_t>(i), bits});
  }
  compare_values(id, kind, actual, static_cast<int64_t>(values.size()), expected, tally);
}

// Replay every vector of one family from both files ("" = all). Returns the tally.
inline Tally replay_family(const std::string& family) {
  Tally tally;
  for (const Value& vector : golden_file()["vectors"].as_array()) {
    if (family.empty() || golden_family(vector) == family) replay_golden_vector(vector, tally);
  }
  for (const Value& vector : torch_file()["vectors"].as_array()) {
    if (family.empty() || torch_family(vector) == family) replay_torch_vector(vector, tally);
  }
  return tally;
}

}  // namespace tg_test
