// float16 read as float32: tg::float16_bits_to_float against PyTorch's conversion of all 65536
// half values (tests/reference/float16_torch.json, hashed per row of 1024), and safetensors
// files with F16 and BF16 tensors read as float32 when asked, as float16 and bfloat16 otherwise.
#include "autograd/float16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/json.h"
#include "nn/safetensors.h"
#include "test_util.h"

namespace tg {
namespace {

std::string hex(uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return buf;
}

// FNV-1a 64 over the little-endian bytes of the float32 results of halves first .. first+count-1.
uint64_t hash_of_conversions(uint32_t first, uint32_t count) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint32_t half = first; half < first + count; ++half) {
    const uint32_t bits = std::bit_cast<uint32_t>(float16_bits_to_float(static_cast<uint16_t>(half)));
    for (int i = 0; i < 4; ++i) h = (h ^ ((bits >> (8 * i)) & 0xFFu)) * 0x100000001B3ull;
  }
  return h;
}

TEST(Float16, EveryHalfValueConvertsToPyTorchsFloat32BitForBit) {
  const json::Value ref = json::parse_file(std::string(TG_REFERENCE_DIR) + "/float16_torch.json");
  for (const json::Value& sample : ref["samples"].as_array()) {
    const auto half = static_cast<uint16_t>(std::stoul(sample[0].as_string(), nullptr, 16));
    EXPECT_EQ(hex(std::bit_cast<uint32_t>(float16_bits_to_float(half)), 8), sample[1].as_string())
        << "half 0x" << sample[0].as_string();
  }
  ASSERT_EQ(ref["rows"].size(), 64u);
  for (uint32_t row = 0; row < 64; ++row)  // one sign and exponent per row, all 1024 mantissas
    EXPECT_EQ(hex(hash_of_conversions(row * 1024, 1024), 16), ref["rows"][row].as_string())
        << "halves 0x" << hex(row * 1024, 4) << " .. 0x" << hex(row * 1024 + 1023, 4);
}

// A file with an F16, a BF16 and an F32 tensor, written byte by byte.
std::string sixteen_bit_file() {
  const std::string header =
      R"({"h":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]},)"
      R"("f":{"dtype":"F32","shape":[1],"data_offsets":[14,18]}})";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  bytes += header;
  auto u16 = [&](uint16_t v) { bytes += static_cast<char>(v & 0xFF), bytes += static_cast<char>(v >> 8); };
  for (uint16_t v : {0x3C00, 0xC000, 0x0001, 0x7C00}) u16(v);  // 1, -2, 2^-24, inf
  for (uint16_t v : {0x3F80, 0x4049, 0xFF80}) u16(v);          // 1, 3.140625, -inf
  const float f = 0.5f;
  bytes.append(reinterpret_cast<const char*>(&f), 4);
  return bytes;
}

TEST(Safetensors, ReadsF16AndBF16AsFloat32WhenAskedAndAsTheirOwnDtypesOtherwise) {
  test::TempFolder folder;
  const std::string path = folder.file("half.safetensors");
  test::write_bytes(path, sixteen_bit_file());

  std::vector<std::string> converted;
  const NamedTensors got = load_safetensors(path, SafetensorsReadOptions{.float16_to_float32 = true}, &converted);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(converted, (std::vector<std::string>{"F16", "BF16"}));
  for (const auto& [name, t] : got) EXPECT_EQ(t.dtype(), kFloat32) << name;
  EXPECT_EQ(got[0].second.sizes(), (Shape{2, 2}));
  EXPECT_EQ(got[0].second.reshape({4}).tolist<float>(),
            (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), INFINITY}));
  EXPECT_EQ(got[1].second.tolist<float>(), (std::vector<float>{1.0f, 3.140625f, -INFINITY}));
  EXPECT_EQ(got[2].second.tolist<float>(), (std::vector<float>{0.5f}));

  // not asked: F16 is read as float16 (a storage dtype: its 16 bits as they are), BF16 as bfloat16
  const NamedTensors kept = load_safetensors(path);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].second.dtype(), kFloat16);
  EXPECT_EQ(kept[1].second.dtype(), kBFloat16);
  const Float16* h = kept[0].second.data_ptr<Float16>();
  EXPECT_EQ(h[0].bits, 0x3C00);
  EXPECT_EQ(h[3].bits, 0x7C00);
  EXPECT_TRUE(test::same_bytes(kept[0].second.to(kFloat32), got[0].second));  // widened: the same values
  // and with keep_16bit, a kept F16 tensor is float16 while the rest is widened
  const NamedTensors some = load_safetensors(
      path, SafetensorsReadOptions{.float16_to_float32 = true, .keep_16bit = [](const std::string& n) { return n == "h"; }});
  EXPECT_EQ(some[0].second.dtype(), kFloat16);
  EXPECT_EQ(some[1].second.dtype(), kFloat32);
}

TEST(Safetensors, WithoutF16TheRequestKeepsBF16AsFloat32AndTheRestAsTheyAre) {
  test::TempFolder folder;
  const std::string path = folder.file("bf16.safetensors");
  save_safetensors(path, {{"b", full({2}, 1.5, kBFloat16)}, {"i", full({1}, 3, kInt64)}});
  std::vector<std::string> converted;
  const NamedTensors got = load_safetensors(path, SafetensorsReadOptions{.float16_to_float32 = true}, &converted);
  EXPECT_EQ(converted, (std::vector<std::string>{"BF16"}));
  EXPECT_EQ(got[0].second.dtype(), kFloat32);
  EXPECT_EQ(got[1].second.dtype(), kInt64);
  EXPECT_EQ(load_safetensors(path)[0].second.dtype(), kBFloat16);  // not asked: bfloat16 stays
}

}  // namespace
// A large BF16 tensor (widened a slice at a time) read straight into a given float32 tensor: the
// same values as reading it anew, in that tensor's own memory; a given tensor of another shape is
// an Error naming both.
TEST(Safetensors, ReadIntoWidensAWholeLargeTensorIntoTheGivenOne) {
  test::TempFolder folder;
  const std::string path = folder.file("big.safetensors");
  const int64_t n = (int64_t{1} << 22) * 2 + 5;  // more than two of the reader's slices
  const Tensor values = (arange(0, n, 1, kFloat32) * 0.001).to(kBFloat16);
  save_safetensors(path, {{"small", full({3}, 2.5, kBFloat16)}, {"big", values}});
  Tensor into = zeros({n}, kFloat32);
  const void* memory = into.raw_data();
  SafetensorsReadOptions options{.float16_to_float32 = true};
  options.read_into = [&](const std::string& name) { return name == "big" ? into : Tensor(); };
  std::vector<std::string> names;
  for_each_safetensor(path, options, [&](const std::string& name, const Tensor& t) {
    names.push_back(name);
    if (name == "big") EXPECT_EQ(t.raw_data(), memory);
    else EXPECT_EQ(t.tolist<float>(), (std::vector<float>{2.5f, 2.5f, 2.5f}));
  });
  EXPECT_EQ(names, (std::vector<std::string>{"small", "big"}));
  EXPECT_TRUE(test::same_bytes(into, values.to(kFloat32)));

  Tensor wrong = zeros({n - 1}, kFloat32);
  options.read_into = [&](const std::string& name) { return name == "big" ? wrong : Tensor(); };
  const std::string error =
      test::error_of([&] { for_each_safetensor(path, options, [](const std::string&, const Tensor&) {}); });
  EXPECT_TRUE(test::has_part(error, path + ": byte ")) << error;
  EXPECT_TRUE(test::has_part(error, "tensor \"big\" is float32 of shape (8388613) but the tensor to read it into is "
                                    "float32 of shape (8388612)")) << error;
}

}  // namespace tg
