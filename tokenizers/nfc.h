// tokenizers/nfc.h — Unicode Normalization Form C (NFC), the normalizer of Qwen2's and Qwen3's
// tokenizer.json: the text as canonical decomposition, canonical ordering, then canonical
// composition make it (UAX #15), so "e" + U+0301 (combining acute) and "é" (U+00E9) encode alike.
//
//   decompose  each code point into its full canonical decomposition (nfc_table.h's, made from
//              Python's unicodedata; Hangul syllables by the algorithm: L V (T))
//   order      each run of code points of combining class > 0 sorted by class, stably
//   compose    each code point joined to the last starter (class 0) before it when the pair is a
//              primary composite and nothing between them blocks it (a code point of class 0,
//              or of a class >= its own); Hangul L + V and LV + T by the algorithm
//
// Most text is unchanged: nfc() first looks for a code point that NFC may change (the table's
// kMaybeChanged; ASCII never is) and returns the text as it is when there is none. Bytes that
// are not UTF-8 are kept as they are, and normalization runs on the UTF-8 between them.
#pragma once
#include <string>
#include <string_view>

namespace tg::tokenizers {

std::string nfc(std::string_view text);
// True when no code point of text is one NFC may change (then nfc(text) == text).
bool nfc_quick_check(std::string_view text);
// The Unicode version of the tables ("14.0.0").
const char* nfc_unicode_version();

}  // namespace tg::tokenizers
