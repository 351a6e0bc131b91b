// train/classification_data.h: the three file shapes a labelled set comes in, its classes, the
// balanced 70/10/20 split, and bad files named by the file, the line and the field.
#include "train/classification_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "test_util.h"

namespace tg::test {
namespace {

using train::LabelledText;

std::string error_of(const std::string& content, const std::string& source, const std::vector<std::string>& columns) {
  try {
    train::parse_labelled_text(content, source, columns);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ClassificationData, ReadsCsvTsvAndJsonl) {
  // a header row, in any case, other columns ignored; RFC 4180 quotes (a comma, a quote, a newline)
  const auto csv = train::parse_labelled_text(
      "id,Text,LABEL\r\n1,\"Win, now\",spam\n\n2,\"He said \"\"hi\"\"\nthen left\",ham\n", "m.csv", {});
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[0].text, "Win, now");
  EXPECT_EQ(csv[0].label, "spam");
  EXPECT_EQ(csv[0].line, 2);
  EXPECT_EQ(csv[1].text, "He said \"hi\"\nthen left");
  EXPECT_EQ(csv[1].line, 4);
  // the SMS Spam Collection's shape: no header, tabs, quotes that are only characters
  const auto tsv = train::parse_labelled_text("ham\tOk \"lar... Joking\r\nspam\tFREE entry\n", "SMSSpamCollection",
                                              train::parse_columns("label,text"));
  ASSERT_EQ(tsv.size(), 2u);
  EXPECT_EQ(tsv[0].text, "Ok \"lar... Joking");
  EXPECT_EQ(tsv[1].label, "spam");
  EXPECT_EQ(tsv[1].line, 2);
  // a skipped column
  const auto skipped = train::parse_labelled_text("7,1,good\n8,0,bad\n", "r.csv", train::parse_columns("id,label,text"));
  EXPECT_EQ(skipped[1].text, "bad");
  EXPECT_EQ(skipped[1].label, "0");
  const auto jsonl = train::parse_labelled_text(
      "{\"text\": \"great\", \"label\": 1, \"id\": 3}\n\n{\"text\": \"awful\", \"label\": \"0\"}\n", "r.jsonl", {});
  ASSERT_EQ(jsonl.size(), 2u);
  EXPECT_EQ(jsonl[0].label, "1");
  EXPECT_EQ(jsonl[1].label, "0");
  EXPECT_EQ(jsonl[1].line, 3);
}

TEST(ClassificationData, ClassesAreTheSortedNamesOrTheIntegersInOrder) {
  auto texts = [](std::vector<std::string> labels) {
    std::vector<LabelledText> out;
    for (const std::string& l : labels) out.push_back({"x", l, 1});
    return out;
  };
  EXPECT_EQ(train::class_names(texts({"spam", "ham", "spam"}), "f"), (std::vector<std::string>{"ham", "spam"}));
  EXPECT_EQ(train::class_names(texts({"B", "a", "C"}), "f"), (std::vector<std::string>{"B", "C", "a"}));  // Python's sorted
  EXPECT_EQ(train::class_names(texts({"10", "2", "0", "1"}), "f"), (std::vector<std::string>{"0", "1", "2", "10"}));
  EXPECT_EQ(train::class_names(texts({"-1", "1"}), "f"), (std::vector<std::string>{"-1", "1"}));
  EXPECT_EQ(train::class_names(texts({"1", "one"}), "f"), (std::vector<std::string>{"1", "one"}));
  try {
    train::class_names(texts({"ham", "ham"}), "sms.tsv");
    FAIL() << "one class";
  } catch (const Error& e) {
    EXPECT_TRUE(has_part(e.what(), "sms.tsv: only one class (\"ham\"): a classifier needs two or more")) << e.what();
  }
}

TEST(ClassificationData, TheSplitIsSeventyTenTwentyAndBalancedOnRequest) {
  std::vector<LabelledText> texts;
  for (int i = 0; i < 100; ++i) texts.push_back({"t" + std::to_string(i), i % 5 == 0 ? "spam" : "ham", i + 1});
  const train::LabelledSplits s = train::split_labelled(texts, false, 123);
  EXPECT_EQ(s.train.size(), 70u);
  EXPECT_EQ(s.val.size(), 10u);
  EXPECT_EQ(s.test.size(), 20u);
  std::set<int64_t> lines;
  for (const auto* part : {&s.train, &s.val, &s.test})
    for (const LabelledText& t : *part) lines.insert(t.line);
  EXPECT_EQ(lines.size(), 100u);  // each text once
  EXPECT_NE(s.train[0].line, 1);  // shuffled
  const train::LabelledSplits again = train::split_labelled(texts, false, 123);
  EXPECT_EQ(again.test.front().line, s.test.front().line);  // the same seed, the same split
  EXPECT_NE(train::split_labelled(texts, false, 124).train.front().line, s.train.front().line);

  const train::LabelledSplits balanced = train::split_labelled(texts, true, 123);
  std::map<std::string, int> count;
  for (const auto* part : {&balanced.train, &balanced.val, &balanced.test})
    for (const LabelledText& t : *part) ++count[t.label];
  EXPECT_EQ(count["spam"], 20);
  EXPECT_EQ(count["ham"], 20);  // 80 cut down to the 20 spam
  EXPECT_EQ(balanced.train.size(), 28u);  // int(40 * 0.7)
  EXPECT_EQ(balanced.val.size(), 4u);
  // int(90 * 0.7) is 62 in float64 (62.99999999999999), as Python's int(len(df) * 0.7), not 63
  std::vector<LabelledText> ninety(texts.begin(), texts.begin() + 90);
  EXPECT_EQ(train::split_labelled(ninety, false, 1).train.size(), 62u);
}

TEST(ClassificationData, BadFilesNameTheFileTheLineAndTheField) {
  EXPECT_TRUE(has_part(error_of("id,review\n1,good\n", "r.csv", {}),
                       "r.csv: line 1: the header names no \"text\" column (it has: id, review; a file without a "
                       "header row takes --columns, e.g. --columns label,text)"));
  EXPECT_TRUE(has_part(error_of("ham\tok\nspam\n", "sms", train::parse_columns("label,text")),
                       "sms: line 2: 1 column, expected 2 (label, text)"));
  EXPECT_TRUE(has_part(error_of("text,label\n\"a\",x\n\"b,y\n", "m.csv", {}), "m.csv: line 3"));
  EXPECT_TRUE(has_part(error_of("{\"text\": \"a\", \"label\": [1]}\n", "d.jsonl", {}),
                       "d.jsonl: line 1: \"label\" must be a string or an integer, got an array"));
  EXPECT_TRUE(has_part(error_of("{\"text\": \"a\", \"label\": 1.5}\n", "d.jsonl", {}),
                       "\"label\" must be a string or an integer, got 1.5"));
  EXPECT_TRUE(has_part(error_of("{\"label\": 1}\n", "d.jsonl", {}), "d.jsonl: line 1: \"text\" is missing"));
  EXPECT_TRUE(has_part(error_of("text,label\n,ham\n", "m.csv", {}), "m.csv: line 2: the text is empty"));
  EXPECT_TRUE(has_part(error_of("text,label\nhi,\n", "m.csv", {}), "m.csv: line 2: the label is empty"));
  EXPECT_TRUE(has_part(error_of("\n\n", "m.csv", {}), "m.csv: no rows"));
  EXPECT_TRUE(has_part(error_of("{}", "d.jsonl", {"label", "text"}), "no --columns"));
  try {
    train::parse_columns("label,body");
    FAIL() << "no text column";
  } catch (const Error& e) {
    EXPECT_TRUE(has_part(e.what(), "--columns \"label,body\": name the \"text\" column once")) << e.what();
  }
}

}  // namespace
}  // namespace tg::test
