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

#include <cstdint>

#include "io/json.h"
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

// --- Llama 3's pattern ---------------------------------------------------------------------------
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)  contraction_any_case_at: ASCII letters in either case, and ſ
//                                 (U+017F, which case-folds to s)
//   [^\r\n\p{L}\p{N}]?\p{L}+       an optional space, tab or other character (not CR or LF), then
//                                 the longest run of letters
//   \p{N}{1,3}                    at most max_digits numbers
//   ' ?[^\s\p{L}\p{N}]+[\r\n]*'     an optional U+0020, the longest run of other characters, and
//                                 the CRs and LFs after it
//   \s*[\r\n]+                    a run of spaces up to its last CR or LF (the regex's \s* gives
//                                 back characters until [\r\n]+ can match, and that is the last one)
//   \s+(?!\S) | \s+               as GPT-2's
// As there, each alternative that can match at i is one of these cases, tried in order, and the
// engine's greedy choice is the longest run.

bool is_cr_or_lf(std::string_view text, size_t i) { return text[i] == '\r' || text[i] == '\n'; }

size_t contraction_any_case_at(std::string_view text, size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  auto lower = [&](size_t k) { return k < text.size() ? static_cast<char>(text[k] | 0x20) : '\0'; };
  const char a = lower(i + 1), b = lower(i + 2);
  const bool ascii_letter = (text[i + 1] | 0x20) >= 'a' && (text[i + 1] | 0x20) <= 'z';
  if (ascii_letter && (a == 's' || a == 't' || a == 'm' || a == 'd')) return 2;
  if (text.substr(i + 1, 2) == "\xC5\xBF") return 3;  // 'ſ
  const bool second_letter = i + 2 < text.size() && (text[i + 2] | 0x20) >= 'a' && (text[i + 2] | 0x20) <= 'z';
  if (ascii_letter && second_letter && ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')))
    return 3;
  return 0;
}

// The end of the run of characters of class cls from `from`, at most `limit` of them.
size_t run_end(std::string_view text, size_t from, CodePointClass cls, size_t limit = SIZE_MAX) {
  size_t end = from;
  for (Character c; limit > 0 && end < text.size() && (c = Utf8Reading::at(text, end)).cls == cls; --limit)
    end += c.length;
  return end;
}

size_t llama3_length(std::string_view text, size_t i, int max_digits) {
  if (const size_t n = contraction_any_case_at(text, i)) return n;
  const Character first = Utf8Reading::at(text, i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (first.cls == CodePointClass::kLetter) return run_end(text, i, CodePointClass::kLetter) - i;
  const bool may_lead = (first.cls == CodePointClass::kOther || first.cls == CodePointClass::kSpace) && !is_cr_or_lf(text, i);
  if (may_lead && i + first.length < text.size() &&
      Utf8Reading::at(text, i + first.length).cls == CodePointClass::kLetter)
    return run_end(text, i + first.length, CodePointClass::kLetter) - i;
  // \p{N}{1,max_digits}
  if (first.cls == CodePointClass::kNumber)
    return run_end(text, i, CodePointClass::kNumber, static_cast<size_t>(max_digits)) - i;
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t start = SIZE_MAX;
  if (first.cls == CodePointClass::kOther) start = i;
  else if (text[i] == ' ' && i + 1 < text.size() && Utf8Reading::at(text, i + 1).cls == CodePointClass::kOther) start = i + 1;
  if (start != SIZE_MAX) {
    size_t end = run_end(text, start, CodePointClass::kOther);
    while (end < text.size() && is_cr_or_lf(text, end)) ++end;
    return end - i;
  }
  // \s*[\r\n]+ | \s+(?!\S) | \s+ : the run of spaces from i
  size_t end = i, last = i, after_last_newline = 0;
  for (Character c; end < text.size() && (c = Utf8Reading::at(text, end)).cls == CodePointClass::kSpace;) {
    if (is_cr_or_lf(text, end)) after_last_newline = end + 1;
    last = end;
    end += c.length;
  }
  if (after_last_newline > 0) return after_last_newline - i;
  if (end < text.size() && last > i) return last - i;  // a non-space follows: its last space leads the next chunk
  return end - i;
}

}  // namespace

size_t llama3_chunk_length(std::string_view text, size_t i, int max_digits) { return llama3_length(text, i, max_digits); }

size_t gpt2_chunk_length(std::string_view text, size_t i) { return chunk_length<Utf8Reading>(text, i); }
size_t byte_chunk_length(std::string_view text, size_t i) { return chunk_length<ByteReading>(text, i); }
std::vector<std::string_view> gpt2_split(std::string_view text) { return split<Utf8Reading>(text); }
std::vector<std::string_view> byte_split(std::string_view text) { return split<ByteReading>(text); }

}  // namespace tg::tokenizers
