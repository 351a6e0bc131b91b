// train/classification_data.cpp — labelled texts read, their classes, the balanced 70/10/20 split
// (see the header).
#include "train/classification_data.h"

#include <algorithm>
#include <map>
#include <random>

#include "autograd/error.h"
#include "io/flags.h"
#include "io/json.h"
#include "io/user_file.h"
#include "autograd/ops.h"
#include "train/corpus.h"
#include "train/instructions.h"
#include "train/task_formats.h"

namespace tg::train {

namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return text;
}

bool is_integer(const std::string& text) {  // up to 18 digits, so that stoll reads it
  const size_t start = !text.empty() && text[0] == '-' ? 1 : 0;
  return text.size() > start && text.size() - start <= 18 &&
         text.find_first_not_of("0123456789", start) == std::string::npos;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// The rows of a CSV or TSV text: fields and the line each starts on.
std::vector<CsvRow> table_rows(const std::string& content, const std::string& source, bool tabs) {
  if (!tabs) return parse_csv(content, source);
  std::vector<CsvRow> rows;
  int64_t line = 0;
  for (const std::string_view text : text_lines(content)) {
    ++line;
    if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
    CsvRow row;
    row.line = line;
    for (size_t start = 0;;) {
      const size_t tab = text.find('\t', start);
      row.fields.emplace_back(text.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<LabelledText> parse_table(const std::string& content, const std::string& source,
                                      std::vector<std::string> columns, bool tabs) {
  const std::vector<CsvRow> rows = table_rows(content, source, tabs);
  size_t first = 0;
  if (columns.empty()) {  // the header row names them
    if (rows.empty()) throw Error(source + ": no rows (every line is blank)");
    for (const std::string& name : rows[0].fields) columns.push_back(lower(name));
    for (const char* needed : {"text", "label"})
      if (std::count(columns.begin(), columns.end(), needed) != 1)
        throw Error(source + ": line " + std::to_string(rows[0].line) + ": the header names " +
                    (std::count(columns.begin(), columns.end(), needed) == 0 ? "no" : "more than one") + " \"" +
                    needed + "\" column (it has: " + join(rows[0].fields) +
                    "; a file without a header row takes --columns, e.g. --columns label,text)");
    first = 1;
  }
  const size_t text_column = std::find(columns.begin(), columns.end(), "text") - columns.begin();
  const size_t label_column = std::find(columns.begin(), columns.end(), "label") - columns.begin();
  std::vector<LabelledText> out;
  for (size_t r = first; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    const std::string where = source + ": line " + std::to_string(row.line);
    if (row.fields.size() != columns.size())
      throw Error(where + ": " + std::to_string(row.fields.size()) + (row.fields.size() == 1 ? " column" : " columns") +
                  ", expected " + std::to_string(columns.size()) + " (" + join(columns) + ")");
    out.push_back({row.fields[text_column], row.fields[label_column], row.line});
  }
  return out;
}

std::vector<LabelledText> parse_jsonl(const std::string& content, const std::string& source) {
  std::vector<LabelledText> out;
  for_each_jsonl_object(content, source, "{\"text\": ..., \"label\": ...}",
                        [&](const json::Value& object, const std::string& where, int64_t line) {
    if (!object.contains("text")) throw Error(where + ": \"text\" is missing");
    if (!object.contains("label")) throw Error(where + ": \"label\" is missing");
    const json::Value& text = object["text"];
    const json::Value& label = object["label"];
    if (!text.is_string())
      throw Error(where + ": \"text\" must be a string, got " + std::string(json::Value::kind_name(text.kind())));
    std::string name;
    if (label.is_string()) name = label.as_string();
    else if (label.is_number() && is_integer(label.number_text())) name = label.number_text();
    else
      throw Error(where + ": \"label\" must be a string or an integer, got " +
                  (label.is_number() ? label.number_text() : std::string(json::Value::kind_name(label.kind()))));
    out.push_back({text.as_string(), name, line});
  });
  return out;
}

}  // namespace

std::vector<std::string> parse_columns(const std::string& columns) {
  if (columns.empty()) return {};  // the file names them in its header row
  std::vector<std::string> names;
  size_t start = 0;
  for (size_t comma; (comma = columns.find(',', start)) != std::string::npos; start = comma + 1)
    names.push_back(lower(columns.substr(start, comma - start)));
  names.push_back(lower(columns.substr(start)));
  for (const char* needed : {"text", "label"})
    if (std::count(names.begin(), names.end(), needed) != 1)
      throw Error("--columns " + json::quote(columns) + ": name the \"" + needed +
                  "\" column once (the columns in order, e.g. label,text; any other name skips a column)");
  return names;
}

std::vector<LabelledText> parse_labelled_text(const std::string& content, const std::string& source,
                                              const std::vector<std::string>& columns) {
  const bool jsonl = source.ends_with(".jsonl");
  if (jsonl && !columns.empty()) throw Error(source + ": a JSONL file names its fields (\"text\", \"label\"): no --columns");
  const std::vector<std::string_view> lines = text_lines(content);
  const std::string_view first_line = lines.empty() ? std::string_view() : lines[0];
  std::vector<LabelledText> out = jsonl ? parse_jsonl(content, source)
                                        : parse_table(content, source, columns, first_line.find('\t') != std::string_view::npos);
  if (out.empty()) throw Error(source + ": no labelled texts");
  for (const LabelledText& t : out) {
    const std::string where = source + ": line " + std::to_string(t.line);
    if (t.label.empty()) throw Error(where + ": the label is empty");
    if (t.text.empty()) throw Error(where + ": the text is empty");
  }
  return out;
}

std::vector<LabelledText> read_labelled_text(const std::string& path, const std::vector<std::string>& columns) {
  return parse_labelled_text(read_input_file(path, "--data " + path), path, columns);
}

std::vector<std::string> class_names(const std::vector<LabelledText>& texts, const std::string& source) {
  std::vector<std::string> names;
  for (const LabelledText& t : texts)
    if (std::find(names.begin(), names.end(), t.label) == names.end()) names.push_back(t.label);
  if (names.size() < 2)
    throw Error(source + ": only one class (" + json::quote(names.empty() ? "" : names[0]) +
                "): a classifier needs two or more");
  if (std::all_of(names.begin(), names.end(), is_integer))
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  else
    std::sort(names.begin(), names.end());
  return names;
}

namespace {

// i + a draw below n - i, for i < k: the partial Fisher-Yates shuffle (the same on every standard library)
void shuffle_first(std::vector<LabelledText>& v, size_t k, std::mt19937_64& gen) {
  for (size_t i = 0; i < k && i + 1 < v.size(); ++i) std::swap(v[i], v[i + static_cast<size_t>(gen() % (v.size() - i))]);
}

// Every class cut down to the smallest one's count, a random subset of each (drawn from gen), in
// file order.
void balance_classes(std::vector<LabelledText>& texts, std::mt19937_64& gen) {
  std::map<std::string, std::vector<LabelledText>> by_class;
  for (LabelledText& t : texts) by_class[t.label].push_back(std::move(t));
  size_t fewest = texts.size();
  for (const auto& [label, members] : by_class) fewest = std::min(fewest, members.size());
  texts.clear();
  for (auto& [label, members] : by_class) {  // a random `fewest` of each class, in file order
    shuffle_first(members, fewest, gen);
    members.resize(fewest);
    std::sort(members.begin(), members.end(), [](const LabelledText& a, const LabelledText& b) { return a.line < b.line; });
    for (LabelledText& t : members) texts.push_back(std::move(t));
  }
  std::sort(texts.begin(), texts.end(), [](const LabelledText& a, const LabelledText& b) { return a.line < b.line; });
}

}  // namespace

LabelledSplits split_labelled(std::vector<LabelledText> texts, bool balance, uint64_t seed) {
  std::mt19937_64 gen(seed);
  if (balance) balance_classes(texts, gen);
  shuffle_first(texts, texts.size(), gen);
  // int(n * 0.7) and int(n * 0.1) in float64, as Python's int(len(df) * 0.7) rounds them
  const size_t n = texts.size(), train_end = static_cast<size_t>(static_cast<double>(n) * 0.7);
  const size_t val_end = train_end + static_cast<size_t>(static_cast<double>(n) * 0.1);
  LabelledSplits s;
  s.train.assign(texts.begin(), texts.begin() + static_cast<std::ptrdiff_t>(train_end));
  s.val.assign(texts.begin() + static_cast<std::ptrdiff_t>(train_end), texts.begin() + static_cast<std::ptrdiff_t>(val_end));
  s.test.assign(texts.begin() + static_cast<std::ptrdiff_t>(val_end), texts.end());
  return s;
}

std::vector<ClassificationExample> encode_labelled(const std::vector<LabelledText>& texts,
                                                   const std::vector<std::string>& classes,
                                                   const tokenizers::Tokenizer& tokenizer, int64_t context,
                                                   const std::string& source) {
  std::vector<ClassificationExample> out;
  for (const LabelledText& t : texts) {
    const std::string where = source + ": line " + std::to_string(t.line);
    const auto place = std::find(classes.begin(), classes.end(), t.label);
    if (place == classes.end())
      throw Error(where + ": the label " + json::quote(t.label) + " is none of the classes (" + join(classes) + ")");
    ClassificationExample e;
    try {
      e.ids = tokenizer.encode_with_bos(t.text);
    } catch (const Error& error) {
      throw Error(where + ": " + error.what());
    }
    if (e.ids.empty()) throw Error(where + ": the text has no tokens");
    if (std::ssize(e.ids) > context) e.ids.resize(static_cast<size_t>(context));
    e.label = place - classes.begin();
    e.line = t.line;
    out.push_back(std::move(e));
  }
  return out;
}

Batch classification_batch(const std::vector<ClassificationExample>& examples, const std::vector<int64_t>& which,
                           int64_t pad_id) {
  const int64_t B = std::ssize(which);
  int64_t L = 0;
  for (int64_t i : which) L = std::max(L, std::ssize(examples.at(static_cast<size_t>(i)).ids));
  std::vector<int64_t> x(static_cast<size_t>(B * L), pad_id), padded(static_cast<size_t>(B * L), 1), labels;
  for (int64_t b = 0; b < B; ++b) {
    const ClassificationExample& e = examples[static_cast<size_t>(which[static_cast<size_t>(b)])];
    std::copy(e.ids.begin(), e.ids.end(), x.begin() + b * L);
    std::fill(padded.begin() + b * L, padded.begin() + b * L + std::ssize(e.ids), 0);
    labels.push_back(e.label);
  }
  return {from_vector(x, {B, L}), from_vector(labels, {B}), from_vector(padded, {B, L}) == 1};
}

ClassificationData load_classification_data(const std::string& content, const std::string& source,
                                            const std::vector<std::string>& columns, bool balance, uint64_t seed,
                                            const tokenizers::Tokenizer& tokenizer, int64_t context,
                                            const SplitFiles& files) {
  const bool given = !files.val.empty() || !files.test.empty();
  if (given && (files.val.empty() || files.test.empty()))
    throw UsageError("--val-data and --test-data go together: give both files, or neither to split --data 70/10/20");
  std::vector<LabelledText> texts = parse_labelled_text(content, source, columns);
  ClassificationData data;
  LabelledSplits splits;
  if (given) {  // the files are the splits
    splits.val = read_labelled_text(files.val, columns);
    splits.test = read_labelled_text(files.test, columns);
    std::vector<LabelledText> all = texts;
    all.insert(all.end(), splits.val.begin(), splits.val.end());
    all.insert(all.end(), splits.test.begin(), splits.test.end());
    data.classes = class_names(all, source + ", " + files.val + " and " + files.test);
    if (balance) {
      std::mt19937_64 gen(seed);
      balance_classes(texts, gen);
    }
    splits.train = std::move(texts);
  } else {
    data.classes = class_names(texts, source);
    splits = split_labelled(std::move(texts), balance, seed);
  }
  if (splits.train.empty() || splits.val.empty() || splits.test.empty())
    throw Error(source + ": " + std::to_string(splits.train.size() + splits.val.size() + splits.test.size()) +
                " texts" + (balance ? " after --balance" : "") + " make a split of " + std::to_string(splits.train.size()) +
                " training, " + std::to_string(splits.val.size()) + " validation and " +
                std::to_string(splits.test.size()) + " test texts: each split needs one at least (10 texts or more)");
  data.train = encode_labelled(splits.train, data.classes, tokenizer, context, source);
  data.val = encode_labelled(splits.val, data.classes, tokenizer, context, given ? files.val : source);
  data.test = encode_labelled(splits.test, data.classes, tokenizer, context, given ? files.test : source);
  data.pad_id = std::max<int64_t>(0, tokenizer.end_of_text_id());
  return data;
}

std::string labelled_texts_as_text(const std::string& content, const std::string& source,
                                   const std::vector<std::string>& columns, const SplitFiles& splits) {
  std::string text;
  for (const LabelledText& t : parse_labelled_text(content, source, columns)) text += t.text + "\n";
  for (const std::string& file : {splits.val, splits.test})
    if (!file.empty())
      for (const LabelledText& t : read_labelled_text(file, columns)) text += t.text + "\n";
  return text;
}

}  // namespace tg::train
