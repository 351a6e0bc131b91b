// GPT-2's pre-split over code points (tokenizers/pre_split.h) on hand-worked cases, each
// worked through the pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// by hand: contractions, the one leading space, Unicode letters, numbers and spaces (White_Space,
// U+0085 included, U+FEFF not), runs of spaces before a word, and bytes that are not UTF-8.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizers/pre_split.h"
#include "tokenizers/unicode_classes.h"

namespace tg {
namespace {

std::vector<std::string> chunks_of(const std::string& text) {
  std::vector<std::string> out;
  for (std::string_view chunk : tokenizers::gpt2_split(text)) out.emplace_back(chunk);
  return out;
}

using Chunks = std::vector<std::string>;

TEST(Gpt2Split, WordsTakeTheOneSpaceBeforeThem) {
  EXPECT_EQ(chunks_of("Hello world"), (Chunks{"Hello", " world"}));
  EXPECT_EQ(chunks_of("a1b 22 c!"), (Chunks{"a", "1", "b", " 22", " c", "!"}));
  EXPECT_EQ(chunks_of("x ?!"), (Chunks{"x", " ?!"}));
  EXPECT_EQ(chunks_of("123456789012"), (Chunks{"123456789012"}));  // no limit on digits in GPT-2
}

TEST(Gpt2Split, ContractionsAreLowerCaseAndOnlyWhereAChunkStarts) {
  EXPECT_EQ(chunks_of("I'm you'll we've they're it's don't I'd"),
            (Chunks{"I", "'m", " you", "'ll", " we", "'ve", " they", "'re", " it", "'s", " don", "'t", " I", "'d"}));
  EXPECT_EQ(chunks_of("IT'S"), (Chunks{"IT", "'", "S"}));
  EXPECT_EQ(chunks_of("'sx 'x"), (Chunks{"'s", "x", " '", "x"}));
  EXPECT_EQ(chunks_of("?'s"), (Chunks{"?'", "s"}));  // inside a run of others ' is no contraction
  EXPECT_EQ(chunks_of("'lll"), (Chunks{"'ll", "l"}));
}

TEST(Gpt2Split, RunsOfSpacesLeaveTheLastSpaceToTheWord) {
  EXPECT_EQ(chunks_of("a  b"), (Chunks{"a", " ", " b"}));
  EXPECT_EQ(chunks_of("a    b"), (Chunks{"a", "   ", " b"}));
  EXPECT_EQ(chunks_of("end   "), (Chunks{"end", "   "}));  // nothing follows: the whole run
  EXPECT_EQ(chunks_of("a\t\tb"), (Chunks{"a", "\t", "\t", "b"}));  // only U+0020 leads a word
  EXPECT_EQ(chunks_of("a\r\nb"), (Chunks{"a", "\r", "\n", "b"}));
  EXPECT_EQ(chunks_of("a \n\n b"), (Chunks{"a", " \n\n", " b"}));
  EXPECT_EQ(chunks_of(" "), (Chunks{" "}));
  EXPECT_EQ(chunks_of("\n\n"), (Chunks{"\n\n"}));
}

TEST(Gpt2Split, UnicodeLettersNumbersAndSpaces) {
  EXPECT_EQ(chunks_of("caf\u00e9 cr\u00e8me"), (Chunks{"caf\u00e9", " cr\u00e8me"}));
  EXPECT_EQ(chunks_of("\u673a\u5668\u5b66\u4e60\u3002"), (Chunks{"\u673a\u5668\u5b66\u4e60", "\u3002"}));
  EXPECT_EQ(chunks_of("x \u216b\u00bd\u0661"), (Chunks{"x", " \u216b\u00bd\u0661"}));  // Nl, No, Nd
  EXPECT_EQ(chunks_of("x\u3000y"), (Chunks{"x", "\u3000", "y"}));        // ideographic space: \s
  EXPECT_EQ(chunks_of("x \u3000y"), (Chunks{"x", " ", "\u3000", "y"}));
  EXPECT_EQ(chunks_of("x\u00a0 y"), (Chunks{"x", "\u00a0", " y"}));
  EXPECT_EQ(chunks_of("x\u0085y"), (Chunks{"x", "\u0085", "y"}));        // NEL: White_Space (not JS \s)
  EXPECT_EQ(chunks_of("x\ufeffy"), (Chunks{"x", "\ufeff", "y"}));        // BOM: other (JS \s has it)
  EXPECT_EQ(chunks_of("x\x1fy"), (Chunks{"x", "\x1f", "y"}));            // not White_Space (re's \s has it)
  EXPECT_EQ(chunks_of("hi \U0001F44D\U0001F3FD!"), (Chunks{"hi", " \U0001F44D\U0001F3FD!"}));
}

TEST(Gpt2Split, EachByteOfInvalidUtf8IsAnOtherCharacter) {
  EXPECT_EQ(chunks_of("ab\xff" "cd"), (Chunks{"ab", "\xff", "cd"}));
  EXPECT_EQ(chunks_of("a \xff\xfe!"), (Chunks{"a", " \xff\xfe!"}));
  EXPECT_EQ(chunks_of("\xe6\x9c" "a"), (Chunks{"\xe6\x9c", "a"}));      // a cut-off sequence
  EXPECT_EQ(chunks_of("\xc0\xaf x"), (Chunks{"\xc0\xaf", " x"}));       // overlong '/'
  EXPECT_EQ(chunks_of("\xed\xa0\x80"), (Chunks{"\xed\xa0\x80"}));       // a surrogate
}

TEST(Gpt2Split, ChunksPutTogetherGiveBackTheText) {
  const std::string text = "It's 42\xff\xfe \u00e9t\u00e9 \t\n  \u4e2d\u6587!!\r\n";
  std::string joined;
  for (std::string_view chunk : tokenizers::gpt2_split(text)) joined += chunk;
  EXPECT_EQ(joined, text);
}

TEST(UnicodeClasses, TableClassesAsUnicodeSays) {
  EXPECT_EQ(tokenizers::class_of('a'), tokenizers::CodePointClass::kLetter);
  EXPECT_EQ(tokenizers::class_of('7'), tokenizers::CodePointClass::kNumber);
  EXPECT_EQ(tokenizers::class_of('\v'), tokenizers::CodePointClass::kSpace);
  EXPECT_EQ(tokenizers::class_of('_'), tokenizers::CodePointClass::kOther);
  EXPECT_EQ(tokenizers::class_of(0x01C5), tokenizers::CodePointClass::kLetter);  // Lt
  EXPECT_EQ(tokenizers::class_of(0x02B0), tokenizers::CodePointClass::kLetter);  // Lm
  EXPECT_EQ(tokenizers::class_of(0x2028), tokenizers::CodePointClass::kSpace);   // Zl
  EXPECT_EQ(tokenizers::class_of(0x0301), tokenizers::CodePointClass::kOther);   // a combining accent (Mn)
  EXPECT_EQ(tokenizers::class_of(0x1D7CE), tokenizers::CodePointClass::kNumber); // mathematical bold digit zero
  EXPECT_EQ(tokenizers::class_of(0x10FFFF), tokenizers::CodePointClass::kOther);
  EXPECT_STREQ(tokenizers::unicode_classes_version(), "14.0.0");
}

}  // namespace
}  // namespace tg
