// tokenizers/pre_split.cpp — the matcher of GPT-2's pattern (pre_split.h), written out by
// hand (no regex library). At position i the alternatives are tried in the pattern's order:
//
//   's|'t|'re|'ve|'m|'ll|'d       contraction_at: ASCII only, case-sensitive ('S is not one)
//   ' ?\p{L}+'                    one optional U+0020, then the longest run of one class:
//   ' ?\p{N}+'                    the class of the character after the optional space picks
//   ' ?[^\s\p{L}\p{N}]+'          the alternative (letter, number or other)
//   \s+(?!\S)                     a run of spaces less its last space when a non-space
//                                 follows (that space, if it is U+0020, leads the next word)
//   \s+                           the run, when it is that one space
//
// Each alternative of the pattern that can match at i is one of these cases, and the regex
// engine's greedy choice is the longest run, so the chunk is the first case that applies.
#include "tokenizers/pre_split.h"

#include "autograd/io/json.h"
#include "tokenizers/unicode_classes.h"

namespace tg::tokenizers {

namespace {

struct Character {
  CodePointClass cls;
  size_t length;  // bytes
};

// The two readings: the character at text[i] and its class.
struct Utf8Reading {
  static Character at(std::string_view text, size_t i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) return {class_of(byte), 1};
    uint32_t code_point = 0;
    const size_t length = json::decode_utf8_at(text, i, code_point);
    if (length == 0) return {CodePointClass::kOther, 1};  // a byte of no UTF-8 sequence
    return {class_of(code_point), length};
  }
};

struct ByteReading {
  static Character at(std::string_view text, size_t i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == ' ' || (c >= '\t' && c <= '\r')) return {CodePointClass::kSpace, 1};
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c >= 0x80) return {CodePointClass::kLetter, 1};
    if (c >= '0' && c <= '9') return {CodePointClass::kNumber, 1};
    return {CodePointClass::kOther, 1};
  }
};

// The length of the contraction ('s 't 're 've 'm 'll 'd) at text[i], or 0.
size_t contraction_at(std::string_view text, size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  const char a = text[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const char b = i + 2 < text.size() ? text[i + 2] : '\0';
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

template <class Reading>
size_t chunk_length(std::string_view text, size_t i) {
  if (const size_t n = contraction_at(text, i)) return n;
  // ' '? letter+ | ' '? number+ | ' '? other+: the class after the optional space decides
  const size_t start = text[i] == ' ' && i + 1 < text.size() ? i + 1 : i;
  const CodePointClass cls = Reading::at(text, start).cls;
  if (cls != CodePointClass::kSpace) {
    size_t end = start;
    for (Character c; end < text.size() && (c = Reading::at(text, end)).cls == cls;) end += c.length;
    return end - i;
  }
  // \s+(?!\S) | \s+: the run of spaces from i; `last` is where its last space starts
  size_t end = i, last = i;
  for (Character c; end < text.size() && (c = Reading::at(text, end)).cls == CodePointClass::kSpace;) {
    last = end;
    end += c.length;
  }
  const bool non_space_follows = end < text.size();
  if (non_space_follows && last > i) return last - i;
  return end - i;
}

template <class Reading>
std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> chunks;
  for (size_t i = 0; i < text.size();) {
    const size_t n = chunk_length<Reading>(text, i);
    chunks.push_back(text.substr(i, n));
    i += n;
  }
  return chunks;
}

}  // namespace

size_t gpt2_chunk_length(std::string_view text, size_t i) { return chunk_length<Utf8Reading>(text, i); }
size_t byte_chunk_length(std::string_view text, size_t i) { return chunk_length<ByteReading>(text, i); }
std::vector<std::string_view> gpt2_split(std::string_view text) { return split<Utf8Reading>(text); }
std::vector<std::string_view> byte_split(std::string_view text) { return split<ByteReading>(text); }

}  // namespace tg::tokenizers
