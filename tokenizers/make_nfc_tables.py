#!/usr/bin/python3
"""tokenizers/make_nfc_tables.py — writes tokenizers/nfc_table.h, the data of Unicode
Normalization Form C (NFC, the normalizer of Qwen's tokenizer.json) for tokenizers/nfc.cpp, from
Python's own Unicode database (unicodedata, nothing else):

  kCombiningClasses  [first, last] ranges of code points with a canonical combining class > 0,
                     and that class (canonical ordering sorts runs of them by it)
  kDecompositions    each code point with a canonical decomposition, and its full (recursive)
                     decomposition, an offset and length into kDecompositionData. Hangul
                     syllables are left out: nfc.cpp computes theirs
  kCompositions      (first, second) -> composite for each primary composite: a canonical
                     decomposition of two code points that NFC composes back (the composition
                     exclusions and singletons are not there), sorted by the pair
  kMaybeChanged      [first, last] ranges of code points NFC may change or may join with what
                     comes before: those NFC maps elsewhere, those of class > 0, and those that
                     are the second of a composition (Hangul vowels and trailing consonants
                     included). A text without any of them is already NFC (the quick check).

Run from the repository root:

  /usr/bin/python3 tokenizers/make_nfc_tables.py > tokenizers/nfc_table.h
"""
import sys
import unicodedata

HANGUL = range(0xAC00, 0xD7A4)


def ranges(flags):
    """[(first, last, value)] of consecutive code points with the same value (None left out)."""
    out = []
    for cp, value in flags:
        if value is None:
            continue
        if out and out[-1][1] == cp - 1 and out[-1][2] == value:
            out[-1][1] = cp
        else:
            out.append([cp, cp, value])
    return out


def canonical(cp):
    d = unicodedata.decomposition(chr(cp))
    if not d or d.startswith("<"):
        return None
    return [int(x, 16) for x in d.split()]


def full(cp):
    d = canonical(cp)
    if d is None:
        return [cp]
    return [x for part in d for x in full(part)]


def main():
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    classes = ranges((cp, unicodedata.combining(chr(cp)) or None) for cp in cps)
    decompositions, data = [], []
    compositions = {}
    for cp in cps:
        if cp in HANGUL:
            continue
        d = canonical(cp)
        if d is None:
            continue
        f = full(cp)
        decompositions.append((cp, len(data), len(f)))
        data.extend(f)
        if len(d) == 2 and unicodedata.normalize("NFC", chr(d[0]) + chr(d[1])) == chr(cp):
            compositions[(d[0], d[1])] = cp
    seconds = {second for _, second in compositions} | set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    maybe = ranges((cp, True if (unicodedata.normalize("NFC", chr(cp)) != chr(cp) or unicodedata.combining(chr(cp))
                                 or cp in seconds) else None) for cp in cps)
    w = sys.stdout.write
    w("// tokenizers/nfc_table.h — GENERATED, do not edit: Unicode Normalization Form C's data,\n")
    w(f"// Unicode {unicodedata.unidata_version} (Python {sys.version.split()[0]}'s unicodedata). Made by:\n")
    w("//   /usr/bin/python3 tokenizers/make_nfc_tables.py > tokenizers/nfc_table.h\n")
    w("// Read by tokenizers/nfc.cpp only (inside its namespace); what each table holds: make_nfc_tables.py.\n#pragma once\n\n")
    w(f'inline constexpr const char* kNfcTableVersion = "{unicodedata.unidata_version}";\n\n')
    w("struct NfcClassRange {\n  uint32_t first, last;\n  uint8_t ccc;\n};\n")
    w("inline constexpr NfcClassRange kCombiningClasses[] = {\n")
    for a, b, c in classes:
        w(f"    {{0x{a:04X}, 0x{b:04X}, {c}}},\n")
    w("};\n\nstruct NfcDecomposition {\n  uint32_t code_point;\n  uint16_t at, length;\n};\n")
    w("inline constexpr NfcDecomposition kDecompositions[] = {\n")
    for cp, at, n in decompositions:
        w(f"    {{0x{cp:04X}, {at}, {n}}},\n")
    w("};\n\ninline constexpr uint32_t kDecompositionData[] = {\n")
    for i in range(0, len(data), 10):
        w("    " + ", ".join(f"0x{x:04X}" for x in data[i:i + 10]) + ",\n")
    w("};\n\nstruct NfcComposition {\n  uint32_t first, second, composite;\n};\n")
    w("inline constexpr NfcComposition kCompositions[] = {\n")
    for (a, b), c in sorted(compositions.items()):
        w(f"    {{0x{a:04X}, 0x{b:04X}, 0x{c:04X}}},\n")
    w("};\n\nstruct NfcRange {\n  uint32_t first, last;\n};\n")
    w("inline constexpr NfcRange kMaybeChanged[] = {\n")
    for a, b, _ in maybe:
        w(f"    {{0x{a:04X}, 0x{b:04X}}},\n")
    w("};\n")


if __name__ == "__main__":
    main()
