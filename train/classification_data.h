// train/classification_data.h — labelled texts for a classification fine-tune (the book's chapter
// 6: a spam classifier), read from the files people have them in:
//
//   CSV    RFC 4180 (train/task_formats.h: parse_csv); a header row names a "text" and a "label"
//          column, other columns are ignored
//   TSV    fields split at each tab, no quoting (the SMS Spam Collection's texts hold unbalanced
//          quotes), a header row as CSV's
//   JSONL  {"text": str, "label": str or integer} a line; other keys ignored
//
// Read first: parse_labelled_text (how a file is read, its errors), class_names (the classes),
// split_labelled (the split), then load_classification_data, which a run calls.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizers/tokenizer.h"
#include "train/data.h"

namespace tg::train {

struct LabelledText {
  std::string text, label;
  int64_t line = 0;  // 1-based, where its record starts
};

// "label,text" -> {"label", "text"}; both must be named once (an Error saying so otherwise). "" -> {}:
// the file has a header row.
std::vector<std::string> parse_columns(const std::string& columns);

// The texts of the file's content; columns: empty when the file has a header row, else the
// columns in order (parse_columns). source names the file in errors.
//
// The format: JSONL for a name ending in .jsonl; else TSV when the first line holds a tab; else CSV.
// A file without a header row (the SMS Spam Collection: "ham<TAB>Go until jurong point...") is
// read with columns given in order, as train_gpt --columns label,text says; a column named
// anything else is skipped. Blank lines are skipped; "\r\n" ends a line as "\n" does.
//
// Errors name the file, the line and the field: "sms.tsv: line 7: 1 column, expected 2 (--columns
// label,text)", "reviews.csv: line 1: the header names no \"label\" column (it has: id, review;
// a file without a header takes --columns)", "data.jsonl: line 3: \"label\" must be a string or an
// integer, got [1]", "...: only one class (\"ham\"): a classifier needs two".
std::vector<LabelledText> parse_labelled_text(const std::string& content, const std::string& source,
                                              const std::vector<std::string>& columns);
std::vector<LabelledText> read_labelled_text(const std::string& path, const std::vector<std::string>& columns);

// id2label: the classes in id order; at least two. Labels are names ("spam") or integers ("1"). The
// classes are the labels' sorted names, as Python's sorted() orders them, or, when every label is
// an integer, in numeric order: a file labelled 0..n-1 keeps its numbers as ids.
std::vector<std::string> class_names(const std::vector<LabelledText>& texts, const std::string& source);

struct LabelledSplits {
  std::vector<LabelledText> train, val, test;
};
// The split: with balance, every class is cut down to the smallest class's count, a random subset
// of each (the book undersamples "ham" to the 747 "spam"); then the examples are shuffled
// (Fisher-Yates, std::mt19937_64 seeded with seed, a draw below k taken as gen() % k) and cut
// 70/10/20: train is the first int(0.7 n), validation the next int(0.1 n) (n * 0.7 in float64, as
// the book's random_split computes it), test the rest.
LabelledSplits split_labelled(std::vector<LabelledText> texts, bool balance, uint64_t seed);

// A text as the classifier reads it: its ids (Tokenizer::encode_with_bos: the BOS token first where
// the tokenizer adds one), cut to the first `context` ids as the book truncates to max_length, and
// its class, the label's place in classes.
struct ClassificationExample {
  std::vector<int64_t> ids;
  int64_t label = 0;
  int64_t line = 0;
};
// Errors name source and the line: a label that is none of the classes, a text the tokenizer
// cannot encode (a character a character vocabulary lacks) or one with no tokens.
std::vector<ClassificationExample> encode_labelled(const std::vector<LabelledText>& texts,
                                                   const std::vector<std::string>& classes,
                                                   const tokenizers::Tokenizer& tokenizer, int64_t context,
                                                   const std::string& source);
// The examples which[0], which[1], ... as one batch: x (B, L) the ids padded on the right with
// pad_id to the longest, key_padding_mask (B, L) true on the padding, y (B) the labels.
Batch classification_batch(const std::vector<ClassificationExample>& examples, const std::vector<int64_t>& which,
                           int64_t pad_id);

// A classification run's data (train_gpt --task classify): the file's classes and its three splits
// (split_labelled), encoded; pad_id pads a batch on the right (the tokenizer's end-of-text, else 0).
struct ClassificationData {
  std::vector<std::string> classes;
  std::vector<ClassificationExample> train, val, test;
  int64_t pad_id = 0;
};
// content: the file source's text; columns as parse_columns gives them (empty: a header row). The
// split draws from seed. An Error names source when a split is empty (too few texts).
// splits: the validation and test splits' files, when the splits are given (train_gpt --val-data,
// --test-data; both or neither): then all of content trains (--balance cuts its classes alone), and
// the classes are those of the three files together.
struct SplitFiles {
  std::string val, test;
};
ClassificationData load_classification_data(const std::string& content, const std::string& source,
                                            const std::vector<std::string>& columns, bool balance, uint64_t seed,
                                            const tokenizers::Tokenizer& tokenizer, int64_t context,
                                            const SplitFiles& splits = {});
// The texts one a line (content's, then the split files'): what a tokenizer learned from the data
// (char, bpe) is learned from.
std::string labelled_texts_as_text(const std::string& content, const std::string& source,
                                   const std::vector<std::string>& columns, const SplitFiles& splits = {});

}  // namespace tg::train
