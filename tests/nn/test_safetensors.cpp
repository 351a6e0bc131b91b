// Safetensors files: round trips of every dtype and of views, the canonical layout byte by byte,
// every kind of corrupt file (its message names the file and the byte offset), atomic saving,
// and a seeded fuzz test of thousands of damaged files.
#include "nn/safetensors.h"
#include "test_util.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/runtime/memory.h"

namespace tg {
namespace {

using test::error_of;
using test::has_part;
using test::read_bytes;
using test::same_bytes;
using test::TempFolder;
using test::write_bytes;

// The 8 bytes of a little-endian uint64.
std::string le64(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  return out;
}

uint64_t read_le64(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  return n;
}

// A file from its parts: the header's length, the header, the data.
std::string file_of(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

// Where token first appears in a file whose header is header (8 bytes of length before it).
uint64_t at(const std::string& header, const std::string& token, size_t from = 0) {
  size_t pos = header.find(token, from);
  EXPECT_NE(pos, std::string::npos) << token << " not in " << header;
  return 8 + pos;
}

void expect_round_trip(const NamedTensors& tensors, const SafetensorsMetadata& metadata = {}) {
  TempFolder folder;
  std::string path = folder.file("t.safetensors");
  save_safetensors(path, tensors, metadata);
  NamedTensors loaded = load_safetensors(path);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(loaded[i].first, tensors[i].first);
    EXPECT_TRUE(same_bytes(loaded[i].second, tensors[i].second)) << tensors[i].first;
    if (loaded[i].second.numel() > 0) {
      EXPECT_TRUE(loaded[i].second.is_contiguous());
    }
    EXPECT_FALSE(loaded[i].second.requires_grad());
  }
  EXPECT_EQ(load_safetensors_metadata(path), metadata);
}

TEST(Safetensors, RoundTripsEveryDtypeIncludingEmptyAndZeroDimTensors) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> specials = {0.0, -0.0, 1.0, -2.5, inf, -inf, nan, 1e-310, 3.4e38, 1.0 / 3.0};
  expect_round_trip({
      {"f32", from_vector(specials, {2, 5}, kFloat32)},
      {"f64", from_vector(specials, {5, 2}, kFloat64)},
      {"i64", from_vector(std::vector<int64_t>{INT64_MIN, -1, 0, 1, (int64_t{1} << 53) + 1, INT64_MAX}, {3, 2})},
      {"bool", from_vector(std::vector<int64_t>{1, 0, 0, 1, 1}, {5}, kBool)},
      {"f32 0-dim", full({}, 0.25, kFloat32)},
      {"i64 0-dim", full({}, -7, kInt64)},
      {"bool 0-dim", full({}, true, kBool)},
      {"f64 0-dim", full({}, -inf, kFloat64)},
      {"empty f32", zeros({0}, kFloat32)},
      {"empty f64", zeros({2, 0, 3}, kFloat64)},
      {"empty i64", zeros({0, 4}, kInt64)},
      {"empty bool", zeros({3, 0}, kBool)},
      {"random", test::normal_tensor({4, 3, 2}, 7, kFloat32)},
  });
  expect_round_trip({});  // no tensors at all: the header is "{}" and six spaces
}

TEST(Safetensors, MetadataAndUnusualNamesRoundTrip) {
  expect_round_trip({{"caf\xC3\xA9 \"quoted\" back\\slash\ttab\x01", ones({2})}, {"\xF0\x9F\x98\x80", ones({1})}},
                    {{"format", "pt"}, {"note", "line\nbreak, \xE2\x82\xAC"}, {"", "empty key"}});
}

TEST(Safetensors, ViewsSaveTheirLogicalValues) {
  Tensor x = arange(0, 24, 1, kFloat32).view({4, 6});
  Tensor column = from_vector(std::vector<double>{1, 2, 3}, {3, 1}, kFloat64);
  NamedTensors views = {
      {"transposed", x.t()},
      {"sliced", x.slice(1, 1, 6, 2)},
      {"row", x[2]},
      {"narrowed", x.narrow(0, 1, 2)},
      {"expanded", column.expand({3, 4})},
      {"permuted", x.view({2, 2, 6}).permute({2, 0, 1})},
      {"requires_grad", test::leaf(x.t())},
  };
  NamedTensors copies;
  for (const auto& [name, t] : views) copies.push_back({name, t.contiguous()});
  expect_round_trip(views);
  TempFolder folder;
  save_safetensors(folder.file("views.safetensors"), views);
  save_safetensors(folder.file("copies.safetensors"), copies);
  EXPECT_EQ(read_bytes(folder.file("views.safetensors")), read_bytes(folder.file("copies.safetensors")));
}

TEST(Safetensors, WritesTheCanonicalLayoutByteForByte) {
  TempFolder folder;
  std::string path = folder.file("c.safetensors");
  save_safetensors(path, {{"w", from_vector(std::vector<double>{1, 2}, {2}, kFloat32)}, {"m", full({1}, true, kBool)}},
                   {{"format", "pt"}});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("m":{"dtype":"BOOL","shape":[1],"data_offsets":[8,9]}})";
  ASSERT_EQ(header.size(), 139u);
  header += "     ";  // spaces up to 144 bytes, so the data starts at byte 152, a multiple of 8
  std::string data("\x00\x00\x80\x3F\x00\x00\x00\x40\x01", 9);  // 1.0f, 2.0f little-endian, true
  EXPECT_EQ(read_bytes(path), file_of(header, data));
}

TEST(Safetensors, AcceptsAnyMemberOrderUnpaddedHeadersAndKeepsHeaderOrder) {
  // data of "b" before "a", metadata last, no padding, whitespace inside the JSON
  std::string header =
      R"({ "a": {"shape": [2], "dtype": "I64", "data_offsets": [1, 17]},
           "b": {"data_offsets": [0, 1], "dtype": "BOOL", "shape": []}, "__metadata__": {"k": "v"}})";
  std::string data = std::string("\x01", 1) + le64(5) + le64(static_cast<uint64_t>(-3));
  TempFolder folder;
  std::string path = folder.file("any.safetensors");
  write_bytes(path, file_of(header, data));
  NamedTensors loaded = load_safetensors(path);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0].first, "a");
  EXPECT_EQ(loaded[0].second.tolist<int64_t>(), (std::vector<int64_t>{5, -3}));
  EXPECT_EQ(loaded[1].first, "b");
  EXPECT_EQ(loaded[1].second.dim(), 0);
  EXPECT_TRUE(loaded[1].second.item<bool>());
  EXPECT_EQ(load_safetensors_metadata(path), (SafetensorsMetadata{{"k", "v"}}));
}

// --- corrupt files ----------------------------------------------------------------------------

struct Corrupt {
  std::string what;   // the case
  std::string bytes;  // the whole file
  uint64_t byte;      // the offset the message must name
  std::string reason;
};

std::vector<Corrupt> corrupt_files() {
  const std::string f32_2 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<Corrupt> cases;
  auto add = [&](const std::string& what, const std::string& header, const std::string& data, uint64_t byte,
                 const std::string& reason) { cases.push_back({what, file_of(header, data), byte, reason}); };
  std::string h;

  cases.push_back({"empty file", "", 0, "the file has 0 bytes, too few for the 8-byte header length"});
  cases.push_back({"shorter than 8 bytes", "abc", 0, "the file has 3 bytes, too few for the 8-byte header length"});
  cases.push_back({"length past the end", le64(100) + "{}", 0,
                   "header length 100 runs past the end of the file (10 bytes)"});
  cases.push_back({"absurd length", le64(uint64_t{1} << 63) + "{}", 0,
                   "header length 9223372036854775808 is larger than the limit of 104857600 bytes"});
  cases.push_back({"length at the limit", le64(104857600) + "{}", 0,
                   "header length 104857600 runs past the end of the file (10 bytes)"});
  cases.push_back({"length one past the limit", le64(104857601) + "{}", 0,
                   "header length 104857601 is larger than the limit of 104857600 bytes"});
  cases.push_back({"length of all ones", le64(~uint64_t{0}), 0,
                   "header length 18446744073709551615 is larger than the limit of 104857600 bytes"});

  h = "{\"a\xFF\":{}}";
  add("not UTF-8", h, "", at(h, "\xFF"), "header is not valid UTF-8 (a sequence starting with byte 0xFF)");
  h = "{\"a\xC0\x80\":{}}";
  add("overlong UTF-8", h, "", at(h, "\xC0"), "header is not valid UTF-8 (a sequence starting with byte 0xC0)");
  h = "{\"a\xED\xA0\x80\":{}}";
  add("UTF-8 surrogate", h, "", at(h, "\xED"), "header is not valid UTF-8 (a sequence starting with byte 0xED)");
  h = "{\"a\":{}} \xE2\x82";
  add("cut-off UTF-8", h, "", at(h, "\xE2"), "header is not valid UTF-8 (a sequence starting with byte 0xE2)");

  h = R"({"w":{"dtype":"F32",}})";
  add("invalid JSON", h, "", at(h, ",}") + 1, "header is not valid JSON: expected a string key in object, got '}'");
  add("empty header", "", "", 8,
      "header is not valid JSON: expected a value (object, array, string, number, true, false or null), got end of input");
  h = R"({"w":{"dtype":"F\x32"}})";
  add("bad escape", h, "", at(h, "\\x") + 1, "header is not valid JSON: invalid escape in string, got 'x'");
  h = "{\"w\":" + std::string(1000, '[');
  add("deep nesting", h, "", at(h, "[") + 512, "header is not valid JSON: nesting deeper than 512 levels");
  h = R"({"w":{"dtype":"F32","shape":[1e999],"data_offsets":[0,0]}})";
  add("huge number", h, "", at(h, "1e999"), "header is not valid JSON: number 1e999 is too large for a double");
  h = R"({"w":)" + f32_2 + R"(,"w":)" + f32_2 + "}";
  add("duplicate name", h, std::string(8, '\0'), at(h, "\"w\"", 2),
      "header is not valid JSON: duplicate key \"w\" in object");

  add("header an array", "[]", "", 8, "header must be a JSON object, got an array");
  add("header a number after spaces", "  7", "", 10, "header must be a JSON object, got a number");
  h = R"({"w":[]})";
  add("entry an array", h, "", at(h, "[]"), "tensor \"w\" must be an object, got an array");
  h = R"({"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})";
  add("empty name", h, "", at(h, "{\"dtype"), "a tensor has an empty name");
  h = R"({"w":{"dtype":"F32","shape":[0]}})";
  add("missing data_offsets", h, "", at(h, "{\"dtype"), "tensor \"w\": no field \"data_offsets\"");
  h = R"({"w":{"shape":[0],"data_offsets":[0,0]}})";
  add("missing dtype", h, "", at(h, "{\"shape"), "tensor \"w\": no field \"dtype\"");
  h = R"({"w":{"dtype":"F32","data_offsets":[0,0]}})";
  add("missing shape", h, "", at(h, "{\"dtype"), "tensor \"w\": no field \"shape\"");
  h = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"extra":1}})";
  add("unexpected field", h, "", at(h, "1}"), "tensor \"w\": unexpected field \"extra\" (expected dtype, shape, data_offsets)");

  h = R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})";
  add("dtype a number", h, "", at(h, "4,"), "tensor \"w\": dtype must be a string, got a number");
  h = R"({"w":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})";
  add("unknown dtype", h, "x", at(h, "\"Q8\""), "tensor \"w\": dtype \"Q8\" is not a safetensors dtype");
  h = R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})";
  add("dtype in lower case", h, "xxxx", at(h, "\"f32\""), "tensor \"w\": dtype \"f32\" is not a safetensors dtype");
  for (std::string dtype : {"I32", "U8", "F8_E4M3"}) {
    h = R"({"w":{"dtype":")" + dtype + R"(","shape":[1],"data_offsets":[0,1]}})";
    add("dtype " + dtype, h, "x", at(h, "\"" + dtype),
        "tensor \"w\": dtype " + dtype + " is not supported by tapegrad (it reads F32, F64, I64, BOOL, BF16, F16)");
  }

  h = R"({"w":{"dtype":"F32","shape":3,"data_offsets":[0,12]}})";
  add("shape a number", h, "", at(h, "3,"), "tensor \"w\": shape must be an array, got a number");
  h = R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}})";
  add("negative size", h, "", at(h, "-1"), "tensor \"w\": shape[1] must be an integer in [0, 2^64), got -1");
  h = R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}})";
  add("fractional size", h, "", at(h, "1.5"), "tensor \"w\": shape[0] must be an integer in [0, 2^64), got 1.5");
  h = R"({"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})";
  add("size a string", h, "", at(h, "\"2\""), "tensor \"w\": shape[0] must be an integer, got a string");
  h = R"({"w":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,0]}})";
  add("size past int64", h, "", at(h, "922"), "tensor \"w\": shape[0] = 9223372036854775808 is larger than 2^63 - 1");
  h = R"({"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,0]}})";
  add("size past uint64", h, "", at(h, "999"),
      "tensor \"w\": shape[0] must be an integer in [0, 2^64), got 99999999999999999999");
  h = R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})";
  add("byte count overflows", h, "", at(h, "[429"), "tensor \"w\": shape has more than 2^63 - 1 bytes (at shape[1])");
  h = R"({"w":{"dtype":"F64","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})";
  add("empty, but its strides overflow", h, "", at(h, "[0,"),
      "tensor \"w\": shape has more than 2^63 - 1 bytes (at shape[2])");
  h = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})";
  add("shape disagrees with offsets", h, std::string(20, '\0'), at(h, "[0,20]"),
      "tensor \"w\": data_offsets [0, 20] hold 20 bytes, but F32 shape (2,3) needs 24");

  h = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":5}})";
  add("offsets a number", h, "", at(h, "5}"), "tensor \"w\": data_offsets must be an array [begin, end], got a number");
  h = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0,0]}})";
  add("three offsets", h, "", at(h, "[0,0,0]"),
      "tensor \"w\": data_offsets must be an array [begin, end], got an array of 3 elements");
  h = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[0,null]}})";
  add("offset null", h, "", at(h, "null"), "tensor \"w\": data_offsets[1] must be an integer, got null");
  h = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})";
  add("end before begin", h, std::string(8, '\0'), at(h, "[8,4]"), "tensor \"w\": data_offsets [8, 4] end before they begin");
  h = R"({"w":)" + f32_2 + "}";
  add("offsets past the data", h, std::string(4, '\0'), at(h, "[0,8]"),
      "tensor \"w\": data_offsets [0, 8] run past the end of the data (4 bytes)");
  h = R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})";
  add("offsets at 2^64 - 1", h, "", at(h, "[1844"),
      "tensor \"w\": data_offsets [18446744073709551615, 18446744073709551615] run past the end of the data (0 bytes)");

  h = R"({"a":)" + f32_2 + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  add("overlapping offsets", h, std::string(12, '\0'), at(h, "[4,12]"),
      "tensor \"b\": data_offsets [4, 12] overlap those of tensor \"a\" [0, 8]");
  h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  add("a hole between tensors", h, std::string(12, '\0'), at(h, "[8,12]"),
      "tensor \"a\": data_offsets begin at 8, leaving data bytes [4, 8) to no tensor");
  h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  add("a hole at the start", h, std::string(8, '\0'), at(h, "[4,8]"),
      "tensor \"a\": data_offsets begin at 4, leaving data bytes [0, 4) to no tensor");
  h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  add("bytes after the last tensor", h, std::string(6, '\0'), 8 + h.size() + 4,
      "data bytes [4, 6) after the last tensor belong to no tensor");
  add("data but no tensors", "{}", "x", 8 + 2, "data bytes [0, 1) after the last tensor belong to no tensor");

  h = R"({"__metadata__":[]})";
  add("metadata an array", h, "", at(h, "[]"), "\"__metadata__\" must be an object, got an array");
  h = R"({"__metadata__":{"k":1}})";
  add("metadata value a number", h, "", at(h, "1}"), "\"__metadata__\" value of \"k\" must be a string, got a number");

  h = R"({"w":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})";
  add("BOOL byte 2", h, std::string("\x00\x01\x02", 3), 8 + h.size() + 2, "tensor \"w\": BOOL element 2 is 0x02, not 0 or 1");
  return cases;
}

TEST(Safetensors, CorruptFilesAreErrorsNamingTheFileAndTheByteOffset) {
  TempFolder folder;
  std::string path = folder.file("model.safetensors");
  for (const Corrupt& c : corrupt_files()) {
    write_bytes(path, c.bytes);
    std::string expected = "load_safetensors: " + path + ": byte " + std::to_string(c.byte) + ": " + c.reason;
    EXPECT_EQ(error_of([&] { load_safetensors(path); }), expected) << c.what;
    bool in_the_data = has_part(c.reason, "BOOL element");  // found only when the data is read
    EXPECT_EQ(error_of([&] { load_safetensors_metadata(path); }), in_the_data ? "" : expected) << c.what << " (metadata)";
  }
}

TEST(Safetensors, MissingFilesAndFoldersAreErrorsNamingThePath) {
  TempFolder folder;
  EXPECT_EQ(error_of([] { load_safetensors("/nonexistent/x.safetensors"); }),
            "load_safetensors: /nonexistent/x.safetensors: no such file");
  EXPECT_EQ(error_of([&] { load_safetensors(folder.path); }),
            "load_safetensors: " + folder.path + ": is a folder, not a file");
}

// --- saving -----------------------------------------------------------------------------------

TEST(Safetensors, SaveErrorsNameTheFileAndWriteNothing) {
  TempFolder folder;
  std::string path = folder.file("m.safetensors");
  Tensor t = ones({2});
  auto save_error = [&](const NamedTensors& tensors, const SafetensorsMetadata& metadata = {}) {
    return error_of([&] { save_safetensors(path, tensors, metadata); });
  };
  std::string prefix = "save_safetensors: " + path + ": ";
  EXPECT_EQ(save_error({{"a", t}, {"", t}}), prefix + "tensor 1 has an empty name");
  EXPECT_EQ(save_error({{"a", t}, {"b", t}, {"a", t}}), prefix + "tensor name \"a\" is given twice");
  EXPECT_EQ(save_error({{"__metadata__", t}}), prefix + "tensor 0 may not be named \"__metadata__\"");
  EXPECT_EQ(save_error({{"a", Tensor()}}), prefix + "tensor \"a\" is undefined");
  EXPECT_EQ(save_error({{"a\xFF", t}}), prefix + "tensor name \"a\xFF\" is not valid UTF-8 (byte 0xFF at 1)");
  EXPECT_EQ(save_error({{"a", t}}, {{"k", "1"}, {"k", "2"}}), prefix + "metadata key \"k\" is given twice");
  EXPECT_EQ(save_error({{"a", t}}, {{"k", "\xC3"}}), prefix + "metadata value \"\xC3\" is not valid UTF-8 (byte 0xC3 at 0)");
  EXPECT_EQ(folder.count(), 0u);

  std::string missing = folder.file("no/such/folder/m.safetensors");
  std::string message = error_of([&] { save_safetensors(missing, {{"a", t}}); });
  EXPECT_TRUE(has_part(message, "save_safetensors: " + missing + ": cannot create a temporary file " + missing + ".tmp-"));
  EXPECT_TRUE(has_part(message, ": No such file or directory"));
  write_bytes(folder.file("plain_file"), "x");
  std::string under_file = folder.file("plain_file/m.safetensors");
  EXPECT_TRUE(has_part(error_of([&] { save_safetensors(under_file, {{"a", t}}); }), ": Not a directory"));
  EXPECT_EQ(folder.count(), 1u);

  // a folder nobody may write to: a mounted sysfs refuses even root (a read-only folder does for
  // others). In a container or chroot without sysfs, /sys is a plain folder: not checked there.
  if (std::filesystem::exists("/sys/kernel")) {
    EXPECT_TRUE(has_part(error_of([&] { save_safetensors("/sys/m.safetensors", {{"a", t}}); }),
                         "save_safetensors: /sys/m.safetensors: cannot create a temporary file /sys/m.safetensors.tmp-"));
  }
  if (geteuid() != 0) {
    std::string read_only = folder.file("read_only");
    std::filesystem::create_directory(read_only);
    std::filesystem::permissions(read_only, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    EXPECT_TRUE(has_part(error_of([&] { save_safetensors(read_only + "/m.safetensors", {{"a", t}}); }), ": Permission denied"));
    std::filesystem::permissions(read_only, std::filesystem::perms::owner_all);
  }
}

// Tensors made as the file reaches them (TensorToWrite): the bytes a save of the same tensors
// writes, each make() called once, in order, after the tensor before it was let go; one made
// another shape or dtype than its header says is an Error naming both, and nothing is written.
TEST(Safetensors, TensorsMadeAsTheFileReachesThemWriteTheSameBytesOneAtATime) {
  TempFolder folder;
  const Tensor a = arange(0.0, 6.0).reshape({2, 3}), b = arange(0.0, 4.0, 1.0, kInt64);
  const NamedTensors held = {{"a", a}, {"b", b}, {"a.T", a.t()}};
  save_safetensors(folder.file("held.safetensors"), held, {{"format", "pt"}});

  std::vector<int64_t> live_at_make;
  std::vector<TensorToWrite> made;
  for (const auto& [name, t] : held)
    made.push_back({name, t.dtype(), t.sizes(), [&, t = t] {
                      live_at_make.push_back(memory_stats().live_bytes);
                      return t.clone();  // a new tensor each time
                    }});
  {
    AtomicFile file(folder.file("made.safetensors"), "test");
    save_safetensors(file, made, {{"format", "pt"}});
    file.commit();
  }
  EXPECT_EQ(read_bytes(folder.file("made.safetensors")), read_bytes(folder.file("held.safetensors")));
  ASSERT_EQ(live_at_make.size(), 3u);
  EXPECT_EQ(live_at_make[1], live_at_make[0]);  // the tensor before was let go
  EXPECT_EQ(live_at_make[2], live_at_make[0]);

  const std::string path = folder.file("bad.safetensors");
  const std::vector<TensorToWrite> bad = {{"a", kFloat32, {2, 3}, [&] { return a.t().contiguous(); }}};
  const std::string message = error_of([&] {
    AtomicFile file(path, "test");
    save_safetensors(file, bad);
    file.commit();
  });
  EXPECT_EQ(message, "save_safetensors: " + path + ": tensor \"a\" was announced as F32 (2,3) but made as F32 (3,2)");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(folder.count(), 2u);
}

TEST(Safetensors, SaveReplacesAnExistingFile) {
  TempFolder folder;
  std::string path = folder.file("m.safetensors");
  save_safetensors(path, {{"old", zeros({100})}});
  save_safetensors(path, {{"new", ones({2}, kInt64)}});
  NamedTensors loaded = load_safetensors(path);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].first, "new");
  EXPECT_EQ(folder.count(), 1u);
}

TEST(Safetensors, AFailedSaveLeavesThePreviousFileIntactAndNoTemporaryFile) {
  TempFolder folder;
  std::string path = folder.file("m.safetensors");
  save_safetensors(path, {{"old", arange(0, 10, 1, kFloat32)}});
  const std::string before = read_bytes(path);
  std::string prefix = "save_safetensors: " + path + ": ";

  // bad input: refused before the disk is touched
  EXPECT_EQ(error_of([&] { save_safetensors(path, {{"a", ones({1})}, {"a", ones({1})}}); }),
            prefix + "tensor name \"a\" is given twice");
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(folder.count(), 1u);

  // the disk refuses a write half-way: files may not grow past 4 KB for the duration
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);  // a failed write, not a signal
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message = error_of([&] { save_safetensors(path, {{"big", zeros({100000})}}); });
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, saved_handler);
  EXPECT_TRUE(has_part(message, prefix + "cannot write " + path + ".tmp-"));
  EXPECT_TRUE(has_part(message, ": File too large"));
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(folder.count(), 1u);

  // the target is a folder: refused before anything is written
  std::string folder_target = folder.file("a_folder");
  std::filesystem::create_directory(folder_target);
  message = error_of([&] { save_safetensors(folder_target, {{"a", ones({1})}}); });
  EXPECT_EQ(message, "save_safetensors: " + folder_target + ": is a folder, not a file");
  EXPECT_TRUE(std::filesystem::is_directory(folder_target));
  EXPECT_EQ(folder.count(), 2u);
  EXPECT_EQ(load_safetensors(path)[0].second.tolist<float>()[9], 9.0f);
}

// --- fuzzing ----------------------------------------------------------------------------------

// Damaged copies of valid files, each loaded: a clean tg::Error naming the file and a byte, or a
// load that agrees with the file. Mutations flip bytes (anywhere, in the header, in the data),
// truncate, rewrite the length, splice pieces of two files, insert or delete a header byte, change
// a digit of the header, or are random bytes outright.
TEST(Safetensors, FuzzedFilesLoadCorrectlyOrFailCleanly) {
  TempFolder folder;
  std::vector<std::string> valid;
  std::vector<NamedTensors> contents;
  contents.push_back({{"f32", test::normal_tensor({2, 3}, 1, kFloat32)},
                      {"f64", test::normal_tensor({3}, 2, kFloat64)},
                      {"i64", arange(-2, 2, 1, kInt64).view({2, 2})},
                      {"mask", from_vector(std::vector<int64_t>{1, 0, 1, 1, 0}, {5}, kBool)},
                      {"empty", zeros({0, 2})},
                      {"scalar", full({}, 0.5, kFloat64)}});
  contents.push_back({{"w", test::normal_tensor({4}, 3, kFloat32)}, {"b", full({2}, true, kBool)}});
  for (size_t i = 0; i < contents.size(); ++i) {
    save_safetensors(folder.file("valid.safetensors"), contents[i], i == 0 ? SafetensorsMetadata{{"format", "pt"}} : SafetensorsMetadata{});
    valid.push_back(read_bytes(folder.file("valid.safetensors")));
  }

  std::mt19937 rng(20261123);
  auto uniform = [&](size_t n) { return n == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto random_byte = [&] { return static_cast<char>(uniform(256)); };
  const std::string path = folder.file("fuzz.safetensors");
  int loads = 0, errors = 0;
  const int kCases = 6000;
  for (int c = 0; c < kCases; ++c) {
    size_t base = uniform(valid.size());
    std::string bytes = valid[base];
    size_t header_end = 8 + read_le64(bytes);
    int kind = static_cast<int>(uniform(9));
    bool data_only = false;
    switch (kind) {
      case 0:  // flip bytes anywhere
        for (size_t n = 1 + uniform(4); n > 0; --n) bytes[uniform(bytes.size())] = random_byte();
        break;
      case 1:  // flip bytes in the header
        for (size_t n = 1 + uniform(3); n > 0; --n) bytes[8 + uniform(header_end - 8)] = random_byte();
        break;
      case 2:  // flip bytes in the data only
        for (size_t n = 1 + uniform(4); n > 0; --n) bytes[header_end + uniform(bytes.size() - header_end)] = random_byte();
        data_only = true;
        break;
      case 3:  // truncate
        bytes.resize(uniform(bytes.size()));
        break;
      case 4: {  // rewrite the length prefix: near the real one, or anything
        uint64_t n = uniform(2) ? header_end - 8 + uniform(17) - 8 : (uint64_t{rng()} << 32 | rng());
        bytes.replace(0, 8, le64(n));
        break;
      }
      case 5: {  // splice: a piece of another valid file over a random place
        const std::string& other = valid[uniform(valid.size())];
        size_t from = uniform(other.size()), length = 1 + uniform(40), to = uniform(bytes.size());
        std::string piece = other.substr(from, length);
        if (uniform(2)) bytes.replace(to, piece.size(), piece);
        else bytes.insert(to, piece);
        break;
      }
      case 6:  // insert or delete one header byte
        if (uniform(2)) bytes.insert(8 + uniform(header_end - 8), 1, random_byte());
        else bytes.erase(8 + uniform(header_end - 8), 1);
        break;
      case 7: {  // change a digit of the header (sizes and offsets)
        std::vector<size_t> digits;
        for (size_t i = 8; i < header_end; ++i)
          if (bytes[i] >= '0' && bytes[i] <= '9') digits.push_back(i);
        bytes[digits[uniform(digits.size())]] = static_cast<char>('0' + uniform(10));
        break;
      }
      default: {  // random bytes, half of them behind a length that fits
        bytes.resize(uniform(300));
        for (char& b : bytes) b = random_byte();
        if (bytes.size() >= 8 && uniform(2)) bytes.replace(0, 8, le64(uniform(bytes.size() - 7)));
      }
    }
    write_bytes(path, bytes);
    try {
      NamedTensors loaded = load_safetensors(path);
      ++loads;
      // what was loaded tiles the data exactly, and saving it again gives back the same tensors
      uint64_t n = read_le64(bytes);
      uint64_t total = 0;
      for (const auto& [name, t] : loaded) total += t.nbytes();
      ASSERT_EQ(total, bytes.size() - 8 - n) << "case " << c;
      if (loads % 25 == 1) {  // (a save syncs the disk, too slow to do every time)
        save_safetensors(folder.file("again.safetensors"), loaded);
        NamedTensors again = load_safetensors(folder.file("again.safetensors"));
        ASSERT_EQ(again.size(), loaded.size());
        for (size_t i = 0; i < loaded.size(); ++i) ASSERT_TRUE(same_bytes(again[i].second, loaded[i].second)) << "case " << c;
      }
      if (data_only) {  // the header is intact: the tensors hold the (changed) data bytes in order
        ASSERT_EQ(loaded.size(), contents[base].size());
        size_t offset = header_end;
        for (const auto& [name, t] : loaded) {
          if (t.nbytes() > 0) {
            ASSERT_EQ(std::memcmp(t.raw_data(), bytes.data() + offset, t.nbytes()), 0) << "case " << c;
          }
          offset += t.nbytes();
        }
      }
    } catch (const Error& e) {
      ++errors;
      ASSERT_EQ(std::string(e.what()).rfind("load_safetensors: " + path + ": byte ", 0), 0u) << "case " << c << ": " << e.what();
      // only a BOOL byte that is neither 0 nor 1 stops a file whose header is intact
      if (data_only) {
        ASSERT_TRUE(has_part(e.what(), "BOOL element")) << "case " << c;
      }
    }
  }
  EXPECT_EQ(loads + errors, kCases);
  std::cout << "[ fuzz     ] " << loads << " damaged files loaded, " << errors << " refused\n";
  EXPECT_GT(loads, kCases / 20) << "too few damaged files still load: the fuzzing misses the success path";
  EXPECT_GT(errors, kCases / 2);
}

}  // namespace
}  // namespace tg
