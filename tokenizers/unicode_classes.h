// tokenizers/unicode_classes.h — the class of a code point in GPT-2's pre-split pattern
// (gpt2_split, pre_split.h): a letter (\p{L}), a number (\p{N}), a space (\s, Unicode
// White_Space) or other. The classes come from unicode_classes_table.h, generated from Python's
// unicodedata by make_unicode_tables.py (which says why \s is White_Space and how JavaScript's \s
// differs).
//
// Lookup: ASCII from a 128-entry table; any other code point by binary search over the table's
// sorted ranges (about 800), "other" when it falls in none.
#pragma once
#include <array>
#include <cstdint>

namespace tg::tokenizers {

enum class CodePointClass : uint8_t { kOther, kLetter, kNumber, kSpace };

struct CodePointRange {
  uint32_t first, last;  // inclusive
  CodePointClass cls;
};

// The classes of the 128 ASCII code points, and of any other code point (binary search).
extern const std::array<CodePointClass, 128> kAsciiClasses;
CodePointClass class_of_non_ascii(uint32_t code_point);

inline CodePointClass class_of(uint32_t code_point) {
  return code_point < 128 ? kAsciiClasses[code_point] : class_of_non_ascii(code_point);
}
// The Unicode version the table was made from ("14.0.0").
const char* unicode_classes_version();

}  // namespace tg::tokenizers
