#!/usr/bin/python3
"""tokenizers/make_unicode_tables.py — writes tokenizers/unicode_classes_table.h, the code
point classes of GPT-2's pre-split pattern (tokenizers/pre_split.h), from Python's own
Unicode database (unicodedata, nothing else):

  letter  \\p{L}: general categories Lu Ll Lt Lm Lo
  number  \\p{N}: Nd Nl No
  space   \\s: the Unicode White_Space property, which is Zs Zl Zp plus U+0009..U+000D and U+0085.
          This is \\s in tiktoken (Rust's regex crate) and in Python's `regex` module (mrab-regex:
          its \\s is the property SPACE, an alias of WHITE_SPACE). It is not Python re's \\s
          (str.isspace, which adds U+001C..U+001F) nor JavaScript's \\s (which adds U+FEFF and
          leaves out U+0085): js-tiktoken, our reference, differs from GPT-2 on those three.
  other   everything else (no table entry)

The table is sorted, non-overlapping [first, last] ranges with their class, adjacent ranges of
one class joined. Run from the repository root:

  /usr/bin/python3 tokenizers/make_unicode_tables.py > tokenizers/unicode_classes_table.h
"""
import sys
import unicodedata

LETTER = {"Lu", "Ll", "Lt", "Lm", "Lo"}
NUMBER = {"Nd", "Nl", "No"}
SPACE_CATEGORIES = {"Zs", "Zl", "Zp"}
SPACE_EXTRA = set(range(0x09, 0x0E)) | {0x85}


def class_of(code_point):
    if code_point in SPACE_EXTRA:
        return "kSpace"
    category = unicodedata.category(chr(code_point))
    if category in SPACE_CATEGORIES:
        return "kSpace"
    if category in LETTER:
        return "kLetter"
    if category in NUMBER:
        return "kNumber"
    return None


def ranges():
    out = []  # [first, last, class]
    for code_point in range(0x110000):
        c = class_of(code_point)
        if c is None:
            continue
        if out and out[-1][2] == c and out[-1][1] == code_point - 1:
            out[-1][1] = code_point
        else:
            out.append([code_point, code_point, c])
    return out


def main():
    table = ranges()
    w = sys.stdout.write
    w("// tokenizers/unicode_classes_table.h — GENERATED, do not edit: the letter / number / space\n")
    w("// ranges of GPT-2's pre-split classes (\\p{L}, \\p{N}, White_Space), Unicode %s (Python %s's\n"
      % (unicodedata.unidata_version, sys.version.split()[0]))
    w("// unicodedata). Made by:\n")
    w("//   /usr/bin/python3 tokenizers/make_unicode_tables.py > tokenizers/unicode_classes_table.h\n")
    w("// Code points in no range are \"other\". Read by tokenizers/unicode_classes.cpp only.\n")
    w("#pragma once\n\n")
    w("inline constexpr const char* kUnicodeTableVersion = \"%s\";\n\n" % unicodedata.unidata_version)
    w("inline constexpr CodePointRange kCodePointRanges[] = {\n")
    for first, last, c in table:
        w("    {0x%04X, 0x%04X, CodePointClass::%s},\n" % (first, last, c))
    w("};\n")


if __name__ == "__main__":
    main()
