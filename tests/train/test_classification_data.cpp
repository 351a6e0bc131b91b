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
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "autograd/random/generator.h"
#include "models/gpt.h"
#include "models/sequence_classification.h"
#include "tokenizers/tokenizer.h"
#include "train/evaluate.h"
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

TEST(ClassificationData, GivenSplitFilesAreTheSplitsAndTheirLabelsAreClasses) {
  TempFolder dir;
  write_bytes(dir.file("val.csv"), "text,label\nbc,b\n");
  write_bytes(dir.file("test.csv"), "label,text\nc,ab\na,ba\n");  // its own column order; a class train lacks
  const std::string train = "text,label\na,a\naa,a\naaa,a\nb,b\n";
  const tokenizers::Tokenizer chars =
      tokenizers::CharTokenizer::from_text(train::labelled_texts_as_text(train, "train.csv", {}, {dir.file("val.csv"),
                                                                                                   dir.file("test.csv")}));
  EXPECT_EQ(chars.vocab_size(), 4);  // a, b, c and the newline: the split files' characters too
  const train::ClassificationData data =
      train::load_classification_data(train, "train.csv", {}, false, 1, chars, 8, {dir.file("val.csv"), dir.file("test.csv")});
  EXPECT_EQ(data.classes, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(data.train.size(), 4u);  // all of --data, in its order
  EXPECT_EQ(data.train[3].label, 1);
  ASSERT_EQ(data.val.size(), 1u);
  EXPECT_EQ(data.val[0].ids, chars.encode("bc"));
  ASSERT_EQ(data.test.size(), 2u);
  EXPECT_EQ(data.test[0].label, 2);
  // --balance cuts the training file's classes alone: one "a" is kept, at random, and the "b"
  const train::ClassificationData balanced =
      train::load_classification_data(train, "train.csv", {}, true, 1, chars, 8, {dir.file("val.csv"), dir.file("test.csv")});
  ASSERT_EQ(balanced.train.size(), 2u);
  EXPECT_EQ(balanced.train[0].label, 0);
  EXPECT_EQ(balanced.train[1].label, 1);
  EXPECT_EQ(balanced.test.size(), 2u);
  // both files or neither; a label in a split file is named with that file and its line
  expect_error([&] { train::load_classification_data(train, "train.csv", {}, false, 1, chars, 8, {dir.file("val.csv"), ""}); },
               {"--val-data and --test-data go together"});
  write_bytes(dir.file("bad.csv"), "text,label\nab,\n");
  expect_error([&] {
    train::load_classification_data(train, "train.csv", {}, false, 1, chars, 8, {dir.file("val.csv"), dir.file("bad.csv")});
  }, {"bad.csv", "line 2"});
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

TEST(ClassificationData, ExamplesAreEncodedCutAndBatchedOnTheRight) {
  const tokenizers::Tokenizer chars = tokenizers::CharTokenizer::from_text("abcdefgh ");
  const std::vector<LabelledText> texts = {{"abc", "spam", 2}, {"h", "ham", 3}, {"abcdefgh", "ham", 4}};
  const auto examples = train::encode_labelled(texts, {"ham", "spam"}, chars, 5, "m.tsv");
  ASSERT_EQ(examples.size(), 3u);
  EXPECT_EQ(examples[0].ids, chars.encode("abc"));
  EXPECT_EQ(examples[0].label, 1);
  EXPECT_EQ(examples[2].ids, chars.encode("abcde"));  // the first 5 ids of 8
  const train::Batch b = train::classification_batch(examples, {1, 0}, 99);
  EXPECT_EQ(b.x.tolist<int64_t>(), (std::vector<int64_t>{chars.encode("h")[0], 99, 99, chars.encode("a")[0],
                                                          chars.encode("b")[0], chars.encode("c")[0]}));
  EXPECT_EQ(b.key_padding_mask.to(kInt64).tolist<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(b.y.tolist<int64_t>(), (std::vector<int64_t>{0, 1}));
  auto error_of = [&](const std::vector<LabelledText>& bad) {
    try {
      train::encode_labelled(bad, {"ham", "spam"}, chars, 5, "m.tsv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{"abc", "eggs", 7}}), "m.tsv: line 7: the label \"eggs\" is none of the classes (ham, spam)");
  EXPECT_TRUE(has_part(error_of({{"xyz", "ham", 8}}), "m.tsv: line 8: tokenizer: character 'x'"));
}

TEST(ClassificationData, EvaluatingInBatchesIsEvaluatingOneByOne) {
  manual_seed(5);
  auto gpt = std::make_shared<models::GPTModel>(
      models::GPTConfig{.vocab_size = 9, .context_length = 8, .emb_dim = 8, .n_heads = 2, .n_layers = 1});
  models::ModelForSequenceClassification model(gpt, 8, 3);
  std::vector<train::ClassificationExample> examples = {
      {{1, 2, 3}, 0, 1}, {{4}, 1, 2}, {{5, 6, 7, 8, 1}, 2, 3}, {{2, 2}, 2, 4}, {{3, 1, 4, 1}, 0, 5}};
  const train::ClassifierEval batched = train::evaluate_classifier(model, examples, 2, 0);
  double nats = 0;
  int64_t right = 0;
  std::vector<std::vector<int64_t>> confusion(3, std::vector<int64_t>(3, 0));
  for (const auto& e : examples) {  // each alone: no padding at all
    NoGradGuard no_grad;
    const Tensor logits = model.forward(from_vector(e.ids, {1, std::ssize(e.ids)}));  // (1, 3)
    nats += cross_entropy(logits, from_vector(std::vector<int64_t>{e.label}, {1})).item<double>();
    const std::vector<float> row = logits.tolist<float>();
    const int64_t predicted = std::max_element(row.begin(), row.end()) - row.begin();
    right += predicted == e.label;
    ++confusion[static_cast<size_t>(e.label)][static_cast<size_t>(predicted)];
  }
  EXPECT_EQ(batched.examples, 5);
  EXPECT_NEAR(batched.loss, nats / 5, 1e-6);
  EXPECT_DOUBLE_EQ(batched.acc, static_cast<double>(right) / 5);
  EXPECT_EQ(batched.confusion, confusion);
}

}  // namespace
}  // namespace tg::test
