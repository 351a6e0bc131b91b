// bfloat16 (tg::kBFloat16, autograd/dtype.h) against PyTorch 1.13
// (tests/reference/make_bfloat16_reference.py -> bfloat16_torch.json): conversions from float32,
// float64 and int64 bit for bit (ties to even, NaN, inf, denormals, the largest values), back to
// float32 and int64, elementwise ops computed in float32 and stored as bfloat16, printing, and
// safetensors BF16 files; and the clear errors of the ops that do not take bfloat16.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "test_util.h"

namespace tg {
namespace {

const json::Value& reference() {
  static const json::Value doc = json::parse_file(TG_REFERENCE_DIR "/bfloat16_torch.json");
  return doc;
}

uint64_t hex(const json::Value& v) { return std::stoull(v.as_string(), nullptr, 16); }

std::vector<uint16_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(c.data_ptr<BFloat16>()[i].bits);
  return out;
}

Tensor from_bits(const std::vector<uint16_t>& bits, const Shape& shape) {
  Tensor t = empty(shape, kBFloat16);
  for (size_t i = 0; i < bits.size(); ++i) t.data_ptr<BFloat16>()[i] = BFloat16::from_bits(bits[i]);
  return t;
}

std::vector<uint16_t> hex_list(const json::Value& array) {
  std::vector<uint16_t> out;
  for (const json::Value& v : array.as_array()) out.push_back(static_cast<uint16_t>(hex(v)));
  return out;
}

bool is_nan_bits(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }

TEST(BFloat16, Float32ConvertsAsPyTorchBitForBit) {
  std::vector<uint32_t> in;
  std::vector<uint16_t> expected;
  for (const json::Value& pair : reference()["from_float32"].as_array()) {
    in.push_back(static_cast<uint32_t>(hex(pair[0])));
    expected.push_back(static_cast<uint16_t>(hex(pair[1])));
  }
  Tensor x = empty({static_cast<int64_t>(in.size())}, kFloat32);
  for (size_t i = 0; i < in.size(); ++i) x.data_ptr<float>()[i] = std::bit_cast<float>(in[i]);
  const std::vector<uint16_t> got = bits_of(x.to(kBFloat16));
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(got[i], expected[i]) << std::hex << "float32 bits 0x" << in[i];
  // and back to float32: exact, the 16 bits then 16 zeros
  const Tensor back = from_bits(expected, {static_cast<int64_t>(expected.size())}).to(kFloat32);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(back.data_ptr<float>()[i]), static_cast<uint32_t>(expected[i]) << 16);
}

TEST(BFloat16, Float64AndInt64ConvertThroughFloat32AsPyTorch) {
  std::vector<double> f64;
  std::vector<uint16_t> expected;
  for (const json::Value& pair : reference()["from_float64"].as_array()) {
    f64.push_back(std::bit_cast<double>(hex(pair[0])));
    expected.push_back(static_cast<uint16_t>(hex(pair[1])));
  }
  const std::vector<uint16_t> got = bits_of(from_vector(f64, {static_cast<int64_t>(f64.size())}).to(kBFloat16));
  for (size_t i = 0; i < f64.size(); ++i) {
    if (std::isnan(f64[i])) EXPECT_TRUE(is_nan_bits(got[i]));
    else EXPECT_EQ(got[i], expected[i]) << "float64 " << f64[i];
  }

  std::vector<int64_t> i64;
  expected.clear();
  for (const json::Value& pair : reference()["from_int64"].as_array()) {
    i64.push_back(std::stoll(pair[0].as_string()));
    expected.push_back(static_cast<uint16_t>(hex(pair[1])));
  }
  EXPECT_EQ(bits_of(from_vector(i64, {static_cast<int64_t>(i64.size())}).to(kBFloat16)), expected);

  std::vector<int64_t> ints;
  for (const json::Value& pair : reference()["to_int64"].as_array()) ints.push_back(std::stoll(pair[1].as_string()));
  std::vector<uint16_t> b;
  for (const json::Value& pair : reference()["to_int64"].as_array()) b.push_back(static_cast<uint16_t>(hex(pair[0])));
  EXPECT_EQ(from_bits(b, {static_cast<int64_t>(b.size())}).to(kInt64).tolist<int64_t>(), ints);
  // inf and nan have no int64: an error naming the value and its index, as for float32
  EXPECT_EQ(test::error_of([] { from_bits({0x3F80, 0x7F80}, {2}).to(kInt64); }),
            "to: value inf at index 1 cannot be converted to type int64 without overflow");
}

TEST(BFloat16, ElementwiseOpsComputeInFloat32AndRoundOnceAsPyTorch) {
  for (const json::Value& c : reference()["ops"].as_array()) {
    const std::string op = c["op"].as_string();
    const std::vector<uint16_t> a_bits = hex_list(c["a"]);
    const Tensor a = from_bits(a_bits, {static_cast<int64_t>(a_bits.size())});
    Tensor b;
    if (!c["b"].is_null()) b = from_bits(hex_list(c["b"]), a.sizes());
    Tensor out;
    if (op == "add") out = a + b;
    else if (op == "sub") out = a - b;
    else if (op == "mul") out = a * b;
    else if (op == "div") out = a / b;
    else if (op == "maximum") out = maximum(a, b);
    else if (op == "neg") out = -a;
    else if (op == "abs") out = abs(a);
    else if (op == "exp") out = exp(a);
    else if (op == "tanh") out = tanh(a);
    else if (op == "sqrt") out = sqrt(a);
    else if (op == "relu") out = relu(a);
    else if (op == "lt") out = a < b;
    else if (op == "eq") out = a == b;
    else FAIL() << "unknown op " << op;
    if (out.dtype() == kBool) {
      std::vector<int64_t> expected;
      for (const json::Value& v : c["out"].as_array()) expected.push_back(v.as_int64());
      EXPECT_EQ(out.to(kInt64).tolist<int64_t>(), expected) << op;
      continue;
    }
    ASSERT_EQ(out.dtype(), kBFloat16) << op;
    const std::vector<uint16_t> got = bits_of(out), expected = hex_list(c["out"]);
    // exp and tanh: PyTorch's vectorised float32 approximations may land on the other side of a
    // rounding boundary, one bfloat16 step away; everything else is bit for bit.
    const int max_steps = (op == "exp" || op == "tanh") ? 1 : 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (is_nan_bits(expected[i])) {
        EXPECT_TRUE(is_nan_bits(got[i])) << op << " at " << i;
      } else if ((expected[i] & 0x7FFF) == 0) {  // a zero: its sign is PyTorch's kernel's accident (relu(-0))
        EXPECT_EQ(got[i] & 0x7FFF, 0) << op << " at " << i;
      } else {
        EXPECT_LE(std::abs(static_cast<int>(got[i]) - static_cast<int>(expected[i])), max_steps)
            << op << " at " << i << std::hex << ": got 0x" << got[i] << ", PyTorch 0x" << expected[i];
      }
    }
  }
}

TEST(BFloat16, PrintsAsPyTorch) {
  for (const json::Value& c : reference()["repr"].as_array()) {
    Shape shape;
    for (const json::Value& v : c["sizes"].as_array()) shape.push_back(v.as_int64());
    EXPECT_EQ(repr(from_bits(hex_list(c["bits"]), shape)), c["repr"].as_string());
  }
}

TEST(BFloat16, FactoriesFillAndScalarsRoundToBfloat16) {
  EXPECT_EQ(bits_of(full({2}, 0.1, kBFloat16)), (std::vector<uint16_t>{0x3DCD, 0x3DCD}));
  EXPECT_EQ(bits_of(ones({1}, kBFloat16)), std::vector<uint16_t>{0x3F80});
  EXPECT_EQ(bits_of(zeros({1}, kBFloat16)), std::vector<uint16_t>{0x0000});
  Tensor x = full({3}, 1.0, kBFloat16);
  EXPECT_EQ((x * 3).dtype(), kBFloat16);                 // a number does not widen a tensor of its kind
  EXPECT_EQ((x + full({3}, 1.0)).dtype(), kFloat32);     // bfloat16 with float32 is float32
  EXPECT_EQ((x + arange(0, 3)).dtype(), kBFloat16);      // with int64 it stays bfloat16
  EXPECT_EQ((x / 3).tolist<float>()[0], 0.333984375f);   // 1/3 in float32, rounded to bfloat16
  EXPECT_EQ(x.sum().item<float>(), 3.0f);
  EXPECT_EQ(x.sum().dtype(), kBFloat16);
  // a number bfloat16 cannot hold is an error, as for float32
  EXPECT_EQ(test::error_of([] { full({1}, 1e39, kBFloat16); }),
            "full: value 1e+39 cannot be converted to type bfloat16 without overflow");
}

TEST(BFloat16, NanAndInfAreSeenByIsnanIsfiniteAndMaximum) {
  // bfloat16 bits: 1.0, nan, inf, -inf
  const Tensor x = from_bits({0x3F80, 0x7FC0, 0x7F80, 0xFF80}, {4});
  EXPECT_EQ(isnan(x).tolist<bool>(), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(isfinite(x).tolist<bool>(), (std::vector<bool>{true, false, false, false}));
  const std::vector<float> most = maximum(x, full({4}, 2.0, kBFloat16)).tolist<float>();
  EXPECT_EQ(most[0], 2.0f);
  EXPECT_TRUE(std::isnan(most[1]));  // a nan wins, as in PyTorch
  EXPECT_TRUE(std::isnan(minimum(x, full({4}, 2.0, kBFloat16)).tolist<float>()[1]));
}

TEST(BFloat16, SafetensorsBF16RoundTripsAndNeedsAnExplicitConversion) {
  test::TempFolder dir;
  const Tensor w = full({2, 3}, 0.1).to(kBFloat16);
  save_safetensors(dir.file("w.safetensors"), {{"w", w}});
  const NamedTensors loaded = load_safetensors(dir.file("w.safetensors"));
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].second.dtype(), kBFloat16);
  EXPECT_EQ(bits_of(loaded[0].second), bits_of(w));
  const std::string bytes = test::read_bytes(dir.file("w.safetensors"));
  EXPECT_NE(bytes.find("\"dtype\":\"BF16\""), std::string::npos);
  EXPECT_EQ(static_cast<unsigned char>(bytes[bytes.size() - 2]), 0xCD);  // 0x3DCD, little-endian
  EXPECT_EQ(static_cast<unsigned char>(bytes[bytes.size() - 1]), 0x3D);
}

TEST(BFloat16, ElementwiseGradientsFlowInBfloat16) {
  Tensor x = full({3}, 1.5, kBFloat16).requires_grad_();
  Tensor w = full({3}, 0.1);  // float32: the product is float32
  ((x * x).sum() + (x * w).sum()).backward();
  EXPECT_EQ(x.grad().dtype(), kBFloat16);
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>(3, 3.09375f)));  // 2x + bf16(0.1) = 3 + 0.0996..., rounded
}

TEST(BFloat16, OpsThatDoNotTakeItSaySo) {
  const Tensor x = ones({2, 2}, kBFloat16);
  const std::string how = ": bfloat16 tensors are not supported here (bfloat16 is for storage, conversion and "
                          "elementwise arithmetic); convert with .to(tg::kFloat32) first";
  EXPECT_EQ(test::error_of([&] { matmul(x, x); }).substr(0, 6), "matmul");
  EXPECT_NE(test::error_of([&] { matmul(x, x); }).find("bfloat16"), std::string::npos);
  EXPECT_EQ(test::error_of([&] { softmax(x, -1); }), "softmax" + how);
  EXPECT_EQ(test::error_of([&] { cumsum(x, 0); }), "cumsum" + how);
}

}  // namespace
}  // namespace tg
