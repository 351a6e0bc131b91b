#include "io/json.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

namespace {

using tg::test::error_of;
using tg::test::has_part;

using tg::json::Value;

// The tg::Error message of parsing text (named "t.json"), or "" if it parsed.
std::string parse_error(const std::string& text) {
  try {
    tg::json::parse(text, "t.json");
  } catch (const tg::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Json, ParsesEveryKindAndKeepsObjectKeyOrder) {
  Value v = tg::json::parse(R"( {"z": null, "a": [true, false, -1.5e2, "x"], "m": {}} )", "t.json");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v.as_object()[0].key, "z");
  EXPECT_EQ(v.as_object()[1].key, "a");
  EXPECT_EQ(v.as_object()[2].key, "m");
  EXPECT_TRUE(v["z"].is_null());
  const Value& a = v["a"];
  EXPECT_TRUE(a[0].as_bool());
  EXPECT_FALSE(a[1].as_bool());
  EXPECT_EQ(a[2].as_double(), -150.0);
  EXPECT_EQ(a[2].number_text(), "-1.5e2");
  EXPECT_EQ(a[3].as_string(), "x");
  EXPECT_TRUE(v["m"].is_object());
  EXPECT_EQ(v["m"].size(), 0u);
  EXPECT_TRUE(v.contains("a"));
  EXPECT_EQ(v.find("nope"), nullptr);
}

TEST(Json, IntegersAreExactFromTheRawTextBeyondTwoToThe53) {
  Value v = tg::json::parse(
      "[18446744073709551615, -9223372036854775808, 9007199254740993, 4294967303, 0, -0]", "t.json");
  EXPECT_EQ(v[0].as_uint64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(v[1].as_int64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(v[2].as_int64(), 9007199254740993);  // 2^53 + 1: not a double
  EXPECT_EQ(v[2].as_double(), 9007199254740992.0);
  EXPECT_EQ(v[3].as_uint64(), 4294967303u);
  EXPECT_EQ(v[4].as_int64(), 0);
  EXPECT_EQ(v[5].as_int64(), 0);
}

TEST(Json, IntegerAccessorsRejectFractionsRangeAndSignNamingThePath) {
  Value v = tg::json::parse(R"({"seeds": [1.5, 18446744073709551616, -3, 9223372036854775808, 1e3]})",
                            "t.json");
  const Value& s = v["seeds"];
  EXPECT_EQ(error_of([&] { s[0].as_int64(); }), "json: t.json: seeds[0]: expected an integer, got 1.5");
  EXPECT_EQ(error_of([&] { s[1].as_uint64(); }),
            "json: t.json: seeds[1]: 18446744073709551616 is out of range for uint64");
  EXPECT_EQ(error_of([&] { s[2].as_uint64(); }),
            "json: t.json: seeds[2]: -3 is negative, expected a uint64");
  EXPECT_EQ(error_of([&] { s[3].as_int64(); }),
            "json: t.json: seeds[3]: 9223372036854775808 is out of range for int64");
  EXPECT_EQ(error_of([&] { s[4].as_int64(); }), "json: t.json: seeds[4]: expected an integer, got 1e3");
  EXPECT_EQ(s[4].as_double(), 1000.0);
}

TEST(Json, WrongKindAccessNamesThePathAndBothKinds) {
  Value v = tg::json::parse(R"({"vectors": [{"seed": "42"}]})", "rng.json");
  EXPECT_EQ(error_of([&] { v["vectors"][0]["seed"].as_int64(); }),
            "json: rng.json: vectors[0].seed: expected a number, got a string");
  EXPECT_EQ(error_of([&] { v["vectors"].as_object(); }),
            "json: rng.json: vectors: expected an object, got an array");
  EXPECT_EQ(error_of([&] { v.as_array(); }),
            "json: rng.json: (top level): expected an array, got an object");
  EXPECT_EQ(error_of([&] { v["vectors"][0]["shape"]; }),
            "json: rng.json: vectors[0]: no key \"shape\"");
  EXPECT_EQ(error_of([&] { v["vectors"][3]; }),
            "json: rng.json: vectors: index 3 is out of range (the array has 1 elements)");
  EXPECT_EQ(error_of([&] { v["vectors"][0]["seed"].size(); }),
            "json: rng.json: vectors[0].seed: size() needs an array or an object, got a string");
}

TEST(Json, StringEscapesIncludingSurrogatePairsBecomeUtf8) {
  Value v = tg::json::parse(R"(["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u20ac", "\ud83d\ude00", "caf\u00E9"])",
                            "t.json");
  EXPECT_EQ(v[0].as_string(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(v[1].as_string(), "\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(v[2].as_string(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(v[3].as_string(), "caf\xC3\xA9");
}

TEST(Json, SyntaxErrorsNameSourceByteOffsetAndWhatWasExpected) {
  EXPECT_EQ(parse_error("[1, 2}"), "json: t.json: byte 5: expected ',' or ']' after array element, got '}'");
  EXPECT_EQ(parse_error("{\"a\": 1,}"), "json: t.json: byte 8: expected a string key in object, got '}'");
  EXPECT_EQ(parse_error("{\"a\" 1}"), "json: t.json: byte 5: expected ':' after object key \"a\", got '1'");
  EXPECT_EQ(parse_error("{\"a\": 1 \"b\": 2}"),
            "json: t.json: byte 8: expected ',' or '}' after object member, got '\"'");
  EXPECT_EQ(parse_error(""),
            "json: t.json: byte 0: expected a value (object, array, string, number, true, false or "
            "null), got end of input");
  EXPECT_EQ(parse_error("[1] x"), "json: t.json: byte 4: expected end of input after the top-level value");
  EXPECT_EQ(parse_error("[tru]"),
            "json: t.json: byte 1: expected a value (object, array, string, number, true, false or "
            "null), got 't'");
  EXPECT_EQ(parse_error("[\"abc"), "json: t.json: byte 1: unterminated string");
  EXPECT_EQ(parse_error("[\"a\nb\"]"),
            "json: t.json: byte 3: control character in string (write it as an escape such as \\n), "
            "got byte 0x0A");
  EXPECT_EQ(parse_error("[\"\\x\"]"), "json: t.json: byte 3: invalid escape in string, got 'x'");
  EXPECT_EQ(parse_error("[\"\\ud800\"]"),
            "json: t.json: byte 2: high surrogate not followed by \\u escape");
  EXPECT_EQ(parse_error("{\"k\": 1, \"k\": 2}"), "json: t.json: byte 9: duplicate key \"k\" in object");
}

TEST(Json, NumbersFollowTheJsonGrammarStrictly) {
  EXPECT_EQ(parse_error("[01]"), "json: t.json: byte 2: a number may not have a leading zero");
  EXPECT_EQ(parse_error("[1.]"), "json: t.json: byte 3: expected a digit after '.' in number, got ']'");
  EXPECT_EQ(parse_error("[-]"), "json: t.json: byte 2: expected a digit in number, got ']'");
  EXPECT_EQ(parse_error("[1e+]"),
            "json: t.json: byte 4: expected a digit in the exponent of number, got ']'");
  EXPECT_NE(parse_error("[+1]"), "");
  EXPECT_NE(parse_error("[.5]"), "");
  EXPECT_NE(parse_error("[NaN]"), "");
  EXPECT_NE(parse_error("[Infinity]"), "");
  EXPECT_EQ(parse_error("[1e400]"), "json: t.json: byte 1: number 1e400 is too large for a double");
  Value tiny = tg::json::parse("[1e-400, -1e-400, 0.1, 2.5E+3]", "t.json");
  EXPECT_EQ(tiny[0].as_double(), 0.0);
  EXPECT_TRUE(std::signbit(tiny[1].as_double()));
  EXPECT_EQ(tiny[2].as_double(), 0.1);
  EXPECT_EQ(tiny[3].as_double(), 2500.0);
}

TEST(Json, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string deep(100000, '[');
  std::string message = parse_error(deep);
  EXPECT_NE(message.find("nesting deeper than 512 levels"), std::string::npos) << message;
  std::string fine = std::string(500, '[') + std::string(500, ']');
  EXPECT_EQ(parse_error(fine), "");
}

TEST(Json, StringsMustBeUtf8AndTheErrorNamesTheByte) {
  EXPECT_EQ(parse_error("[\"ab\xFF\"]"), "json: t.json: byte 4: invalid UTF-8 in string, got byte 0xFF");
  EXPECT_EQ(parse_error("[\"\xC3\"]"), "json: t.json: byte 2: invalid UTF-8 in string, got byte 0xC3");  // cut off
  EXPECT_EQ(parse_error("[\"\xE0\x80\x80\"]"), "json: t.json: byte 2: invalid UTF-8 in string, got byte 0xE0");  // overlong
  EXPECT_EQ(parse_error("[\"\xED\xA0\x80\"]"), "json: t.json: byte 2: invalid UTF-8 in string, got byte 0xED");  // surrogate
  EXPECT_EQ(parse_error("[\"\xF4\x90\x80\x80\"]"), "json: t.json: byte 2: invalid UTF-8 in string, got byte 0xF4");  // > U+10FFFF
  EXPECT_EQ(parse_error("[\xC3\xA9]"),
            "json: t.json: byte 1: expected a value (object, array, string, number, true, false or null), got byte 0xC3");
  try {
    tg::json::parse("{\"a\": \"\x80\"}", "t.json");
    ADD_FAILURE() << "no error";
  } catch (const tg::json::ParseError& e) {
    EXPECT_EQ(e.offset, 7u);
    EXPECT_EQ(e.reason, "invalid UTF-8 in string, got byte 0x80");
  }
}

TEST(Json, FindInvalidUtf8FollowsRfc3629) {
  using tg::json::find_invalid_utf8;
  const size_t none = std::string::npos;
  EXPECT_EQ(find_invalid_utf8(""), none);
  EXPECT_EQ(find_invalid_utf8("plain \x7F"), none);
  EXPECT_EQ(find_invalid_utf8("\xC2\x80 \xDF\xBF \xE0\xA0\x80 \xED\x9F\xBF \xEE\x80\x80 \xF0\x90\x80\x80 \xF4\x8F\xBF\xBF"), none);
  EXPECT_EQ(find_invalid_utf8("ab\x80"), 2u);          // a lone continuation byte
  EXPECT_EQ(find_invalid_utf8("a\xC1\xBF"), 1u);       // overlong 2-byte form
  EXPECT_EQ(find_invalid_utf8("\xE0\x9F\xBF"), 0u);    // overlong 3-byte form
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);    // a surrogate
  EXPECT_EQ(find_invalid_utf8("\xF0\x8F\xBF\xBF"), 0u);  // overlong 4-byte form
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\xF5\x80\x80\x80"), 0u);
  EXPECT_EQ(find_invalid_utf8("ok\xE2\x82"), 2u);      // cut off at the end
  EXPECT_EQ(find_invalid_utf8("\xE2\x82x"), 0u);       // cut off by an ASCII byte
}

TEST(Json, DecodeUtf8GivesCodePointsAndOffsetsAndRefusesWhatFindInvalidUtf8Finds) {
  using tg::json::decode_utf8;
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;
  EXPECT_TRUE(decode_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", cps, &offsets));  // a, é, €, 😀
  EXPECT_EQ(cps, (std::vector<uint32_t>{0x61, 0xE9, 0x20AC, 0x1F600}));
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 1, 3, 6}));
  for (const std::string bad : {"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x9c", "\x80", "\xf8\x88\x80\x80\x80"})
    EXPECT_FALSE(decode_utf8(bad, cps)) << bad.size();
}

// utf8_whole_prefix: the text less a character still waiting for its last bytes (streamed text).
TEST(Json, Utf8WholePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  using tg::json::utf8_whole_prefix;
  EXPECT_EQ(utf8_whole_prefix(""), 0u);
  EXPECT_EQ(utf8_whole_prefix("abc"), 3u);
  EXPECT_EQ(utf8_whole_prefix("a\xC3"), 1u);                  // the first byte of U+00E9
  EXPECT_EQ(utf8_whole_prefix("a\xC3\xA9"), 3u);              // U+00E9 whole
  EXPECT_EQ(utf8_whole_prefix("a\xE2\x82"), 1u);              // two of the euro sign's three bytes
  EXPECT_EQ(utf8_whole_prefix("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(utf8_whole_prefix("\xF0\x9F\x98"), 0u);           // three of U+1F600's four
  EXPECT_EQ(utf8_whole_prefix("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(utf8_whole_prefix("ab\x80"), 3u);                 // invalid bytes print as they are
  EXPECT_EQ(utf8_whole_prefix("a\xFF"), 2u);
  EXPECT_EQ(utf8_whole_prefix("a\x80\x80\x80\x80"), 5u);      // no lead within 3 bytes
  EXPECT_EQ(utf8_whole_prefix("a\xC3\xA9\xC3"), 3u);
}

TEST(Json, AppendUtf8WritesWhatDecodeUtf8Reads) {
  std::string text;
  const std::vector<uint32_t> cps = {0x24, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF};
  for (uint32_t cp : cps) tg::json::append_utf8(text, cp);
  EXPECT_EQ(text.size(), 1u + 1 + 2 + 2 + 3 + 3 + 4 + 4);
  std::vector<uint32_t> back;
  EXPECT_TRUE(tg::json::decode_utf8(text, back));
  EXPECT_EQ(back, cps);
}

TEST(Json, QuoteEscapesOnlyWhatJsonRequiresAsPythonDoes) {
  // the expected strings are json.dumps(s, ensure_ascii=False)
  EXPECT_EQ(tg::json::quote("w"), "\"w\"");
  EXPECT_EQ(tg::json::quote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(tg::json::quote("\b\f\n\r\t\x01\x1f\x7f"), "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
  EXPECT_EQ(tg::json::quote("caf\xC3\xA9 \xF0\x9F\x98\x80"), "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"");
  EXPECT_EQ(tg::json::quote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  std::string tricky = std::string("\"\\\x00\x1f\n caf\xC3\xA9", 11);
  EXPECT_EQ(tg::json::parse(tg::json::quote(tricky), "t.json").as_string(), tricky);
}

TEST(Json, ValuesKnowTheByteOffsetTheyStartAt) {
  Value v = tg::json::parse(R"(  {"a": [1, "x", {}], "b":  true})", "t.json");
  EXPECT_EQ(v.offset(), 2u);
  EXPECT_EQ(v["a"].offset(), 8u);
  EXPECT_EQ(v["a"][0].offset(), 9u);
  EXPECT_EQ(v["a"][1].offset(), 12u);
  EXPECT_EQ(v["a"][2].offset(), 17u);
  EXPECT_EQ(v["b"].offset(), 28u);
}

TEST(Json, ParseFileNamesThePathInErrors) {
  EXPECT_EQ(error_of([] { tg::json::parse_file("/nonexistent/x.json"); }),
            "/nonexistent/x.json: no such file");
  std::string path = ::testing::TempDir() + "tg_json_test_bad.json";
  {
    std::ofstream out(path);
    out << "{\n  \"a\": [1, 2\n}";
  }
  EXPECT_EQ(error_of([&] { tg::json::parse_file(path); }),
            "json: " + path + ": byte 15: expected ',' or ']' after array element, got '}'");
  {
    std::ofstream out(path);
    out << "{\"seed\": 18446744073709551615}";
  }
  EXPECT_EQ(tg::json::parse_file(path)["seed"].as_uint64(), 18446744073709551615ULL);
  std::remove(path.c_str());
}

// ---- writing --------------------------------------------------------------------------------------

using tg::json::Layout;
using tg::json::Writer;

TEST(JsonWriter, StringsAreQuotedWithEscapesAndUtf8AsTheyAre) {
  const char raw[] = "say \"hi\"\\ \n\t\x01 caf\xC3\xA9 \xF0\x9F\x98\x80 \0 end";
  const std::string tricky(raw, sizeof raw - 1);  // the \0 included
  Writer w;
  w.field("s", tricky).field("caf\xC3\xA9 \"key\"", "plain").field("empty", "");
  EXPECT_EQ(w.str(), std::string("{\"s\": \"say \\\"hi\\\"\\\\ \\n\\t\\u0001 caf\xC3\xA9 \xF0\x9F\x98\x80 \\u0000 end\", ") +
                         "\"caf\xC3\xA9 \\\"key\\\"\": \"plain\", \"empty\": \"\"}");
  const Value back = tg::json::parse(w.str(), "t.json");
  EXPECT_EQ(back["s"].as_string(), tricky);
  EXPECT_EQ(back["caf\xC3\xA9 \"key\""].as_string(), "plain");
  EXPECT_EQ(back["empty"].as_string(), "");
}

TEST(JsonWriter, NumbersArePythonsReprTheFewestDigitsThatReadBackAsTheSameDouble) {
  EXPECT_EQ(tg::json::number(0.1), "0.1");
  EXPECT_EQ(tg::json::number(2.5), "2.5");
  EXPECT_EQ(tg::json::number(3.0), "3.0");  // integral: still a float when Python reads it
  EXPECT_EQ(tg::json::number(-7.0), "-7.0");
  EXPECT_EQ(tg::json::number(0.0), "0.0");
  EXPECT_EQ(tg::json::number(-0.0), "-0.0");
  EXPECT_EQ(tg::json::number(0.1 + 0.2), "0.30000000000000004");  // 17 digits
  EXPECT_EQ(tg::json::number(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(tg::json::number(1e-5), "1e-05");
  EXPECT_EQ(tg::json::number(1e300), "1e+300");
  EXPECT_EQ(tg::json::number(-1.5e-300), "-1.5e-300");
  EXPECT_EQ(tg::json::number(5e-324), "5e-324");  // the smallest subnormal
  EXPECT_EQ(tg::json::number(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(tg::json::number(2.2250738585072014e-308), "2.2250738585072014e-308");
  EXPECT_EQ(tg::json::number(123456789012345680000.0), "1.2345678901234568e+20");
  EXPECT_EQ(tg::json::number(9007199254740993.0), "9007199254740992.0");  // 2^53 + 1 is no double
  // Python's repr: a point from 1e-4 up to 1e16, an exponent outside
  EXPECT_EQ(tg::json::number(0.0001), "0.0001");
  EXPECT_EQ(tg::json::number(0.0003), "0.0003");
  EXPECT_EQ(tg::json::number(-0.00012345), "-0.00012345");
  EXPECT_EQ(tg::json::number(0.000099), "9.9e-05");
  EXPECT_EQ(tg::json::number(1e6), "1000000.0");
  EXPECT_EQ(tg::json::number(123.456), "123.456");
  EXPECT_EQ(tg::json::number(1e15), "1000000000000000.0");
  EXPECT_EQ(tg::json::number(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(tg::json::number(1e16), "1e+16");
  EXPECT_EQ(tg::json::number(-1.5e16), "-1.5e+16");

  // every finite double, from its bits: parse(number(v)) is v, bit for bit
  std::mt19937_64 bits(7);
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t b = bits();
    double v;
    std::memcpy(&v, &b, sizeof v);
    if (!std::isfinite(v)) continue;
    const double back = tg::json::parse(tg::json::number(v), "t.json").as_double();
    ASSERT_EQ(std::memcmp(&back, &v, sizeof v), 0) << tg::json::number(v);
    ++checked;
  }
  EXPECT_GT(checked, 19000);
  const double negative_zero = tg::json::parse(Writer().field("z", -0.0).str(), "t.json")["z"].as_double();
  EXPECT_TRUE(std::signbit(negative_zero));
}

TEST(JsonWriter, IntegersAndBoolsAreWrittenAsTheyAre) {
  Writer w;
  w.field("int", 42).field("min", std::numeric_limits<int64_t>::min()).field("max", std::numeric_limits<int64_t>::max())
      .field("u64", std::numeric_limits<uint64_t>::max()).field("size", size_t{7}).field("yes", true).field("no", false)
      .field("none", nullptr).field("absent", std::optional<double>()).field("present", std::optional<double>(0.5));
  EXPECT_EQ(w.str(),
            "{\"int\": 42, \"min\": -9223372036854775808, \"max\": 9223372036854775807, \"u64\": 18446744073709551615, "
            "\"size\": 7, \"yes\": true, \"no\": false, \"none\": null, \"absent\": null, \"present\": 0.5}");
  const Value back = tg::json::parse(w.str(), "t.json");
  EXPECT_EQ(back["min"].as_int64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(back["u64"].as_uint64(), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(back["yes"].as_bool());
  EXPECT_TRUE(back["absent"].is_null());
}

TEST(JsonWriter, LayoutsAreJsonDumpsOnesAndNestedWritersKeepTheirOwn) {
  auto tree = [](Layout layout) {
    Writer inner(layout);
    inner.field("a", 1).field("b", Writer::array(layout).item(1).item("two").item(3.5));
    Writer outer(layout);
    outer.field("x", inner).field("empty", Writer(layout)).field("list", Writer::array(layout));
    return outer.str();
  };
  // json.dumps(x), json.dumps(x, indent=2), json.dumps(x, separators=(",", ":"))
  EXPECT_EQ(tree(Layout::OneLine), R"({"x": {"a": 1, "b": [1, "two", 3.5]}, "empty": {}, "list": []})");
  EXPECT_EQ(tree(Layout::Pretty),
            "{\n  \"x\": {\n    \"a\": 1,\n    \"b\": [\n      1,\n      \"two\",\n      3.5\n    ]\n  },\n"
            "  \"empty\": {},\n  \"list\": []\n}");
  EXPECT_EQ(tree(Layout::Compact), R"({"x":{"a":1,"b":[1,"two",3.5]},"empty":{},"list":[]})");

  // a one-line object inside a pretty one stays on its line (config.json's "model")
  Writer model;
  model.field("n_layers", 2).field("drop_rate", 0.1);
  Writer config(Layout::Pretty);
  config.field("model", model).field("kernels", "fast");
  EXPECT_EQ(config.str(), "{\n  \"model\": {\"n_layers\": 2, \"drop_rate\": 0.1},\n  \"kernels\": \"fast\"\n}");
  // arrays of arrays (a BPE tokenizer's merges)
  Writer merges = Writer::array();
  merges.item(Writer::array().item(32).item(116)).item(Writer::array().item(104).item(101));
  EXPECT_EQ(merges.str(), "[[32, 116], [104, 101]]");
}

TEST(JsonWriter, NonFiniteNumbersAreRefusedNamingTheField) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(error_of([&] { Writer().field("lr", inf); }), "json: \"lr\" is inf: JSON has no inf or nan, so it cannot be written");
  EXPECT_EQ(error_of([&] { Writer().field("loss", -inf); }),
            "json: \"loss\" is -inf: JSON has no inf or nan, so it cannot be written");
  EXPECT_EQ(error_of([&] { Writer().field("final_val_loss", std::optional<double>(nan)); }),
            "json: \"final_val_loss\" is nan: JSON has no inf or nan, so it cannot be written");
  EXPECT_EQ(error_of([&] { Writer::array().item(1.0).item(2.0).item(nan); }),
            "json: item 2 is nan: JSON has no inf or nan, so it cannot be written");
  EXPECT_EQ(error_of([&] { tg::json::number(nan); }), "json: nan is not a number JSON can hold");
  EXPECT_EQ(error_of([&] { tg::json::number(-inf); }), "json: -inf is not a number JSON can hold");
}

TEST(JsonWriter, ParsedValuesAreRewrittenWithTheirNumbersAsWritten) {
  // a file written by Python's json.dumps(x, indent=2), numbers in forms number() does not write
  const std::string text =
      "{\n  \"eps\": 1E-5,\n  \"big\": 18446744073709551615,\n  \"list\": [\n    0.10,\n    null,\n    true\n  ],\n"
      "  \"nested\": {\n    \"s\": \"caf\xC3\xA9\\n\"\n  },\n  \"empty\": []\n}";
  const Value parsed = tg::json::parse(text, "t.json");
  Writer same(Layout::Pretty);
  for (const tg::json::Member& m : parsed.as_object()) same.field(m.key, m.value);
  EXPECT_EQ(same.str(), text);
  Writer line;
  line.field("v", parsed);
  EXPECT_EQ(line.str(),
            "{\"v\": {\"eps\": 1E-5, \"big\": 18446744073709551615, \"list\": [0.10, null, true], "
            "\"nested\": {\"s\": \"caf\xC3\xA9\\n\"}, \"empty\": []}}");
}

TEST(JsonWriter, EmbeddedTextIsCheckedAndIndentedToItsPlace) {
  Writer memory;
  memory.field("parameters_mb", 0.0441);
  Writer run(Layout::Pretty);
  run.field("steps", 3).field("kernels", "fast");
  Writer summary(Layout::Pretty);
  summary.embed("memory", memory.str()).embed("run", run.str());
  EXPECT_EQ(summary.str(),
            "{\n  \"memory\": {\"parameters_mb\": 0.0441},\n  \"run\": {\n    \"steps\": 3,\n    \"kernels\": \"fast\"\n  }\n}");
  EXPECT_TRUE(has_part(error_of([] { Writer().embed("memory", "{\"a\": 1,}"); }), "the JSON text of \"memory\""));
  EXPECT_TRUE(has_part(error_of([] { Writer().embed("memory", "1 2"); }), "expected end of input"));
}

TEST(JsonWriter, ObjectsTakeFieldsAndArraysItems) {
  EXPECT_EQ(error_of([] { Writer::array().field("a", 1); }),
            "json: field \"a\" given to an array (arrays take item())");
  EXPECT_EQ(error_of([] { Writer().item(1); }), "json: item given to an object (objects take field())");
}

TEST(JsonWriter, RoundToKeepsTheDigitsAskedFor) {
  EXPECT_EQ(tg::json::number(tg::json::round_to(0.14312876, 3)), "0.143");
  EXPECT_EQ(tg::json::number(tg::json::round_to(13467.5958, 1)), "13467.6");
  EXPECT_EQ(tg::json::number(tg::json::round_to(0.1 + 0.2, 2)), "0.3");
  EXPECT_EQ(tg::json::number(tg::json::round_to(2.0, 3)), "2.0");
  EXPECT_EQ(tg::json::number(tg::json::round_to(46214.0 / (1 << 20), 4)), "0.0441");
  EXPECT_EQ(tg::json::round_to(1e300, 4), 1e300);  // beyond the scale's range: as it was
  EXPECT_TRUE(std::isnan(tg::json::round_to(std::numeric_limits<double>::quiet_NaN(), 1)));
}

// Everything at once, through parse and back: the same values.
TEST(JsonWriter, WhatItWritesParsesBackToTheSameValues) {
  Writer w(Layout::Pretty);
  w.field("name", "run \"1\"").field("lr", 0.0003).field("steps", int64_t{1} << 40).field("eps", 1e-300)
      .field("tiny", -0.0).field("flags", Writer().field("on", true).field("list", Writer::array().item(1).item(-2.75)));
  const Value v = tg::json::parse(w.str(), "t.json");
  EXPECT_EQ(v["name"].as_string(), "run \"1\"");
  EXPECT_EQ(v["lr"].as_double(), 0.0003);
  EXPECT_EQ(v["steps"].as_int64(), int64_t{1} << 40);
  EXPECT_EQ(v["eps"].as_double(), 1e-300);
  EXPECT_TRUE(std::signbit(v["tiny"].as_double()));
  EXPECT_TRUE(v["flags"]["on"].as_bool());
  EXPECT_EQ(v["flags"]["list"][1].as_double(), -2.75);
  Writer again(Layout::Pretty);
  for (const tg::json::Member& m : v.as_object()) again.field(m.key, m.value);
  EXPECT_EQ(again.str(), w.str().substr(0, w.str().find("\"flags\"")) +
                             "\"flags\": {\n    \"on\": true,\n    \"list\": [\n      1,\n      -2.75\n    ]\n  }\n}");
}

}  // namespace
