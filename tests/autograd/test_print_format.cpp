// Tests for tg::print::format_repr: every case PyTorch 1.13 printed in
// tests/reference/print_torch.json (made by tests/reference/make_print_reference.py) must come
// out character for character, plus hand-written checks of the individual rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "autograd/print_format.h"

namespace {

using tg::print::format_repr;
using tg::print::Kind;
using tg::print::PrintOptions;
using tg::print::Values;

// ------------------------------------------------------------------------------------------
// Turning a reference case into format_repr's inputs

// "3fdb851ec0000000" -> the double with that bit pattern.
double double_from_hex(const std::string& hex) {
  if (hex.size() != 16) throw std::runtime_error("float hex must have 16 digits: " + hex);
  const uint64_t bits = std::stoull(hex, nullptr, 16);
  double value = 0.0;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

Kind kind_from_name(const std::string& name) {
  if (name == "Floating") return Kind::Floating;
  if (name == "Integer") return Kind::Integer;
  if (name == "Bool") return Kind::Bool;
  throw std::runtime_error("unknown kind " + name);
}

struct ReferenceCase {
  std::string name;
  Values values;
  std::vector<std::string> suffixes;
  std::string torch_repr;
};

ReferenceCase case_from_json(const tg::json::Value& json) {
  ReferenceCase c;
  c.name = json["name"].as_string();
  for (const tg::json::Value& size : json["sizes"].as_array()) {
    c.values.sizes.push_back(size.as_int64());
  }
  c.values.kind = kind_from_name(json["kind"].as_string());
  if (const tg::json::Value* hexes = json.find("floats")) {
    for (const tg::json::Value& hex : hexes->as_array()) {
      c.values.floats.push_back(double_from_hex(hex.as_string()));
    }
  }
  if (const tg::json::Value* int_values = json.find("ints")) {
    for (const tg::json::Value& v : int_values->as_array()) c.values.ints.push_back(v.as_int64());
  }
  for (const tg::json::Value& suffix : json["suffixes"].as_array()) {
    c.suffixes.push_back(suffix.as_string());
  }
  c.torch_repr = json["repr"].as_string();
  return c;
}

std::vector<ReferenceCase> load_reference_cases() {
  const tg::json::Value document =
      tg::json::parse_file(std::string(TG_REFERENCE_DIR) + "/print_torch.json");
  std::vector<ReferenceCase> cases;
  for (const tg::json::Value& json : document["cases"].as_array()) {
    cases.push_back(case_from_json(json));
  }
  return cases;
}

// ------------------------------------------------------------------------------------------
// Every PyTorch case, exactly

TEST(PrintFormatTorchReference, EveryCaseMatchesTorchReprExactly) {
  const std::vector<ReferenceCase> cases = load_reference_cases();
  ASSERT_GE(cases.size(), 100u) << "print_torch.json should hold the full set of cases";
  int matched = 0;
  for (const ReferenceCase& c : cases) {
    std::string ours;
    try {
      ours = format_repr(c.values, c.suffixes);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "case " << c.name << ": format_repr threw: " << error.what();
      continue;
    }
    if (ours == c.torch_repr) {
      ++matched;
    } else {
      ADD_FAILURE() << "case " << c.name << " differs from torch\n--- torch:\n"
                    << c.torch_repr << "\n--- ours:\n"
                    << ours << "\n---";
    }
  }
  EXPECT_EQ(matched, static_cast<int>(cases.size()));
}

// ------------------------------------------------------------------------------------------
// The rules, one by one

Values floats(std::vector<int64_t> sizes, std::vector<double> data) {
  return Values{std::move(sizes), Kind::Floating, std::move(data), {}};
}

Values ints(std::vector<int64_t> sizes, std::vector<int64_t> data, Kind kind = Kind::Integer) {
  return Values{std::move(sizes), kind, {}, std::move(data)};
}

TEST(PrintFormatRules, WholeNumberFloatsUseIntegerModeWithTrailingDot) {
  EXPECT_EQ(format_repr(floats({3}, {1.0, 20.0, -3.0}), {}), "tensor([ 1., 20., -3.])");
  EXPECT_EQ(format_repr(floats({}, {3.0}), {}), "tensor(3.)");
}

TEST(PrintFormatRules, OneFractionSwitchesToFourDecimals) {
  EXPECT_EQ(format_repr(floats({3}, {1.0, 20.0, -3.5}), {}),
            "tensor([ 1.0000, 20.0000, -3.5000])");
}

TEST(PrintFormatRules, IntegerModeGoesScientificOnlyBeyondRatio1000OrAbove1e8) {
  EXPECT_EQ(format_repr(floats({2}, {1.0, 1000.0}), {}), "tensor([   1., 1000.])");
  EXPECT_EQ(format_repr(floats({2}, {1.0, 1001.0}), {}), "tensor([1.0000e+00, 1.0010e+03])");
  EXPECT_EQ(format_repr(floats({1}, {2.0e8}), {}), "tensor([2.0000e+08])");
}

TEST(PrintFormatRules, FractionsGoScientificBelow1eMinus4) {
  EXPECT_EQ(format_repr(floats({2}, {1.0e-4, 0.5}), {}), "tensor([1.0000e-04, 5.0000e-01])");
  EXPECT_EQ(format_repr(floats({2}, {0.25, 0.5}), {}), "tensor([0.2500, 0.5000])");
  EXPECT_EQ(format_repr(floats({2}, {0.00025, 0.25}), {}), "tensor([0.0003, 0.2500])");
}

TEST(PrintFormatRules, ZerosNanAndInfDoNotDecideTheFormatButArePadded) {
  EXPECT_EQ(format_repr(floats({4}, {0.0, NAN, -INFINITY, 12.5}), {}),
            "tensor([ 0.0000,     nan,    -inf, 12.5000])");
  EXPECT_EQ(format_repr(floats({3}, {NAN, INFINITY, -INFINITY}), {}), "tensor([nan, inf, -inf])");
  EXPECT_EQ(format_repr(floats({2}, {-0.0, 0.0}), {}), "tensor([-0., 0.])");
}

TEST(PrintFormatRules, ThreeDimensionalBlocksAreSeparatedByOneBlankLine) {
  const Values v = floats({2, 1, 2}, {1.0, 2.0, 3.0, 4.0});
  EXPECT_EQ(format_repr(v, {}),
            "tensor([[[1., 2.]],\n"
            "\n"
            "        [[3., 4.]]])");
}

TEST(PrintFormatRules, FourDimensionalBlocksAreSeparatedByTwoBlankLines) {
  const Values v = floats({2, 1, 1, 1}, {1.0, 2.0});
  EXPECT_EQ(format_repr(v, {}),
            "tensor([[[[1.]]],\n"
            "\n"
            "\n"
            "        [[[2.]]]])");
}

TEST(PrintFormatRules, BoolsAreRightAlignedToFalse) {
  EXPECT_EQ(format_repr(ints({2}, {1, 0}, Kind::Bool), {}), "tensor([ True, False])");
  EXPECT_EQ(format_repr(ints({}, {1}, Kind::Bool), {}), "tensor(True)");
}

TEST(PrintFormatRules, SummaryKeepsThreeAtEachEndAndOnlyShownValuesSetTheFormat) {
  // 1001 elements: summarised. The hidden 0.5 values would force four decimals if they counted.
  std::vector<double> data(1001, 0.5);
  for (int i = 0; i < 3; ++i) data[static_cast<size_t>(i)] = i + 1;
  for (int i = 0; i < 3; ++i) data[1000 - static_cast<size_t>(i)] = 7 + i;
  EXPECT_EQ(format_repr(floats({1001}, data), {}), "tensor([1., 2., 3.,  ..., 9., 8., 7.])");
}

TEST(PrintFormatRules, LongRowsWrapAtLineWidth80) {
  std::vector<int64_t> data(30);
  for (int64_t i = 0; i < 30; ++i) data[static_cast<size_t>(i)] = 100 + i;
  // Each item takes 3 + 2 columns; (80 - 7) / 5 = 14 items per line.
  EXPECT_EQ(format_repr(ints({30}, data), {}),
            "tensor([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113,\n"
            "        114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127,\n"
            "        128, 129])");
}

TEST(PrintFormatRules, SuffixesFollowOnTheLineOrMoveDownIndented) {
  const Values v = floats({2, 2}, {0.43, 0.15, 0.55, 0.87});
  EXPECT_EQ(format_repr(v, {"dtype=torch.float64", "requires_grad=True"}),
            "tensor([[0.4300, 0.1500],\n"
            "        [0.5500, 0.8700]], dtype=torch.float64, requires_grad=True)");
  std::vector<double> row(8, -1.25);
  EXPECT_EQ(format_repr(floats({8}, row), {"dtype=torch.float64"}),
            "tensor([-1.2500, -1.2500, -1.2500, -1.2500, -1.2500, -1.2500, -1.2500, -1.2500],\n"
            "       dtype=torch.float64)");
}

TEST(PrintFormatRules, EmptyTensorsShowTheirShapeUnlessOneDimensional) {
  EXPECT_EQ(format_repr(floats({0}, {}), {}), "tensor([])");
  EXPECT_EQ(format_repr(floats({0, 3}, {}), {}), "tensor([], size=(0, 3))");
  EXPECT_EQ(format_repr(ints({0, 3}, {}), {"dtype=torch.int64"}),
            "tensor([], size=(0, 3), dtype=torch.int64)");
}

TEST(PrintFormatRules, ShowsDtypeFollowsTorch) {
  using tg::print::shows_dtype;
  EXPECT_FALSE(shows_dtype("torch.float32", false));
  EXPECT_FALSE(shows_dtype("torch.float32", true));
  EXPECT_FALSE(shows_dtype("torch.int64", false));
  EXPECT_TRUE(shows_dtype("torch.int64", true));
  EXPECT_FALSE(shows_dtype("torch.bool", false));
  EXPECT_TRUE(shows_dtype("torch.bool", true));
  EXPECT_TRUE(shows_dtype("torch.float64", false));
}

TEST(PrintFormatRules, ShapeStringIsAPythonTuple) {
  EXPECT_EQ(tg::print::shape_string({}), "()");
  EXPECT_EQ(tg::print::shape_string({3}), "(3,)");
  EXPECT_EQ(tg::print::shape_string({2, 0, 3}), "(2, 0, 3)");
}

TEST(PrintFormatOptions, PrecisionAndForcedScientific) {
  PrintOptions two_digits;
  two_digits.precision = 2;
  EXPECT_EQ(format_repr(floats({2}, {1.12345, 2.5}), {}, two_digits), "tensor([1.12, 2.50])");
  PrintOptions sci;
  sci.sci_mode = true;
  EXPECT_EQ(format_repr(floats({1}, {0.5}), {}, sci), "tensor([5.0000e-01])");
}

TEST(PrintFormatOptions, LowerThresholdSummarisesSmallTensors) {
  PrintOptions options;
  options.threshold = 5;
  options.edgeitems = 2;
  EXPECT_EQ(format_repr(ints({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), {}, options),
            "tensor([0, 1,  ..., 8, 9])");
}

// ------------------------------------------------------------------------------------------
// Errors name what was wrong

template <typename Call>
std::string error_message(Call call) {
  try {
    call();
  } catch (const tg::Error& error) {
    return error.what();
  }
  return "(no exception)";
}

TEST(PrintFormatErrors, ValueCountMustMatchTheShape) {
  const std::string message =
      error_message([] { format_repr(floats({2, 3}, {1.0, 2.0}), {}); });
  EXPECT_NE(message.find("(2, 3) has 6 elements but floats holds 2"), std::string::npos)
      << message;
}

TEST(PrintFormatErrors, KindMustMatchTheFilledVector) {
  const std::string message =
      error_message([] { format_repr(ints({1}, {1}, Kind::Floating), {}); });
  EXPECT_NE(message.find("floats holds 0"), std::string::npos) << message;
}

TEST(PrintFormatErrors, BoolValuesMustBeZeroOrOne) {
  const std::string message = error_message([] { format_repr(ints({1}, {2}, Kind::Bool), {}); });
  EXPECT_NE(message.find("must be 0 or 1, got 2"), std::string::npos) << message;
}

TEST(PrintFormatErrors, NegativeSizeIsRejected) {
  const std::string message = error_message([] { format_repr(floats({-1}, {}), {}); });
  EXPECT_NE(message.find("negative size -1"), std::string::npos) << message;
}

}  // namespace
