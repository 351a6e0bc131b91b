// tokenizers/nfc.cpp — NFC (nfc.h): decompose, order, compose, over nfc_table.h's tables.
#include "tokenizers/nfc.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "io/json.h"

namespace tg::tokenizers {

namespace {

#include "tokenizers/nfc_table.h"

// Hangul syllables: S = 0xAC00 + (L * 21 + V) * 28 + T, with L, V, T the jamo's indices.
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const auto it = std::upper_bound(std::begin(kCombiningClasses), std::end(kCombiningClasses), cp,
                                   [](uint32_t c, const NfcClassRange& r) { return c < r.first; });
  return it != std::begin(kCombiningClasses) && cp <= std::prev(it)->last ? std::prev(it)->ccc : 0;
}

bool maybe_changed(uint32_t cp) {
  if (cp < 0x300) return false;
  const auto it = std::upper_bound(std::begin(kMaybeChanged), std::end(kMaybeChanged), cp,
                                   [](uint32_t c, const NfcRange& r) { return c < r.first; });
  return it != std::begin(kMaybeChanged) && cp <= std::prev(it)->last;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + s % kNCount / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), cp,
                                   [](const NfcDecomposition& d, uint32_t c) { return d.code_point < c; });
  if (it == std::end(kDecompositions) || it->code_point != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kDecompositionData + it->at, kDecompositionData + it->at + it->length);
}

// The primary composite of (first, second), or 0 when there is none.
uint32_t compose(uint32_t first, uint32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount)
    return first + (second - kTBase);
  const auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::pair{first, second},
                                   [](const NfcComposition& c, std::pair<uint32_t, uint32_t> key) {
                                     return std::pair{c.first, c.second} < key;
                                   });
  return it != std::end(kCompositions) && it->first == first && it->second == second ? it->composite : 0;
}

// NFC of a run of code points, appended to out as UTF-8.
void normalize(const std::vector<uint32_t>& code_points, std::string& out) {
  std::vector<uint32_t> d;
  for (uint32_t cp : code_points) decompose(cp, d);
  // canonical ordering: a stable sort of each run of non-starters by class
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combining_class(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                     [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  // canonical composition
  std::vector<uint32_t> c;
  size_t starter = SIZE_MAX;  // the index in c of the last starter, if any
  int last_class = -1;        // the class of the last code point kept after that starter
  for (uint32_t cp : d) {
    const int cls = combining_class(cp);
    if (starter != SIZE_MAX && (last_class < cls || last_class == 0)) {  // not blocked
      if (last_class != 0 || c.size() == starter + 1) {
        if (const uint32_t composite = compose(c[starter], cp)) {
          c[starter] = composite;
          continue;
        }
      }
    }
    if (cls == 0) starter = c.size();
    last_class = cls;
    c.push_back(cp);
  }
  for (uint32_t cp : c) json::append_utf8(out, cp);
}

}  // namespace

bool nfc_quick_check(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = json::decode_utf8_at(text, i, cp);
    if (n == 0) {
      ++i;
      continue;
    }
    if (maybe_changed(cp)) return false;
    i += n;
  }
  return true;
}

std::string nfc(std::string_view text) {
  if (nfc_quick_check(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  std::vector<uint32_t> run;  // the code points since the last byte that is not UTF-8
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = json::decode_utf8_at(text, i, cp);
    if (n == 0) {  // kept as it is; it ends the run before it
      normalize(run, out);
      run.clear();
      out += text[i++];
      continue;
    }
    run.push_back(cp);
    i += n;
  }
  normalize(run, out);
  return out;
}

const char* nfc_unicode_version() { return kNfcTableVersion; }

}  // namespace tg::tokenizers
