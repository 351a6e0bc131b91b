// tokenizers/unicode_classes.cpp — class_of: the ASCII table, then binary search over the
// generated ranges (unicode_classes.h).
#include "tokenizers/unicode_classes.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace tg::tokenizers {

namespace {

#include "tokenizers/unicode_classes_table.h"

// Binary search: the last range that starts at or before code_point, if it reaches it.
constexpr CodePointClass class_from_ranges(uint32_t code_point) {
  const auto* end = std::end(kCodePointRanges);
  const auto* after = std::upper_bound(std::begin(kCodePointRanges), end, code_point,
                                       [](uint32_t c, const CodePointRange& r) { return c < r.first; });
  if (after == std::begin(kCodePointRanges)) return CodePointClass::kOther;
  const CodePointRange& range = *std::prev(after);
  return code_point <= range.last ? range.cls : CodePointClass::kOther;
}

constexpr std::array<CodePointClass, 128> ascii_classes() {
  std::array<CodePointClass, 128> table{};
  for (uint32_t c = 0; c < 128; ++c) table[c] = class_from_ranges(c);
  return table;
}

}  // namespace

// Made at compile time (constinit), so it is ready before any other file's static objects.
constinit const std::array<CodePointClass, 128> kAsciiClasses = ascii_classes();

CodePointClass class_of_non_ascii(uint32_t code_point) { return class_from_ranges(code_point); }

const char* unicode_classes_version() { return kUnicodeTableVersion; }

}  // namespace tg::tokenizers
