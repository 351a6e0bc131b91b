// train/task_formats.cpp — reading HellaSwag, ARC, MMLU and generic multiple-choice files into
// prompts and choices as lm-evaluation-harness writes them (see the header for the rules).
#include "train/task_formats.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "autograd/error.h"
#include "io/json.h"
#include "io/user_file.h"
#include "train/instructions.h"

namespace tg::train {

namespace {

const char* const kFormats[] = {"hellaswag", "arc", "mmlu", "choices"};

std::string strip(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && is_python_space(text[begin])) ++begin;
  while (end > begin && is_python_space(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  for (size_t pos = 0;;) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    out.append(text, pos, hit - pos).append(to);
    pos = hit + from.size();
  }
  text = std::move(out);
}

// Latin-1 and ASCII case: the code point's other case, or itself.
uint32_t lower(uint32_t c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 0x20;
  return c;
}
uint32_t upper(uint32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 0x20;
  return c;
}

const json::Value& member(const json::Value& object, const char* key, const std::string& where, const char* field) {
  const json::Value* value = object.find(key);
  if (!value) throw Error(where + ": \"" + field + "\" is missing");
  return *value;
}

const std::string& text_of(const json::Value& value, const std::string& where, const char* field) {
  if (!value.is_string())
    throw Error(where + ": \"" + field + "\" must be a string, got " + json::Value::kind_name(value.kind()));
  return value.as_string();
}

std::vector<std::string> texts_of(const json::Value& value, const std::string& where, const char* field) {
  if (!value.is_array())
    throw Error(where + ": \"" + field + "\" must be a list of strings, got " + json::Value::kind_name(value.kind()));
  if (value.size() == 0) throw Error(where + ": \"" + field + "\" is empty: no choices");
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i)
    out.push_back(text_of(value[i], where, (std::string(field) + "[" + std::to_string(i) + "]").c_str()));
  return out;
}

// A label given as an integer (or, as Hugging Face's copy of HellaSwag has it, a string of one).
int64_t label_of(const json::Value& value, size_t choices, const std::string& where, const char* field) {
  int64_t label = -1;
  if (value.is_number() && value.number_text().find_first_not_of("-0123456789") == std::string::npos) {
    label = value.as_int64();
  } else if (value.is_string() && !value.as_string().empty() && value.as_string().size() < 10 &&
             value.as_string().find_first_not_of("0123456789") == std::string::npos) {
    label = std::stoll(value.as_string());
  } else {
    throw Error(where + ": \"" + field + "\" must be an integer, got " +
                (value.is_string() ? json::quote(value.as_string()) : json::Value::kind_name(value.kind())));
  }
  if (label < 0 || label >= static_cast<int64_t>(choices))
    throw Error(where + ": \"" + field + "\" " + std::to_string(label) + " is out of range [0, " +
                std::to_string(choices) + ")");
  return label;
}

// The format a JSONL line of another format is (by the fields only it has), or "".
std::string format_of_line(const json::Value& object) {
  if (object.contains("ctx_a") || object.contains("endings")) return "a hellaswag line (\"ctx_a\", \"endings\")";
  if (object.contains("answerKey") || (object.contains("question") && object["question"].is_object()))
    return "an ARC line (\"question\", \"answerKey\")";
  if (object.contains("context") && object.contains("choices")) return "a choices line (\"context\", \"choices\")";
  return "";
}

void check_not_other_format(const json::Value& object, TaskFormat format, const std::string& where) {
  const std::string other = format_of_line(object);
  const std::string mine = format == TaskFormat::hellaswag ? "a hellaswag"
                           : format == TaskFormat::arc     ? "an ARC"
                                                           : "a choices";
  if (!other.empty() && other.rfind(mine + " ", 0) != 0)
    throw Error(where + ": " + other + ", not " + mine + " one: the file mixes formats");
}

ChoiceItem hellaswag_item(const json::Value& doc, const std::string& where) {
  ChoiceItem item;
  const std::string ctx = text_of(member(doc, "ctx_a", where, "ctx_a"), where, "ctx_a") + " " +
                          python_capitalize(text_of(member(doc, "ctx_b", where, "ctx_b"), where, "ctx_b"));
  item.query = hellaswag_preprocess(
      text_of(member(doc, "activity_label", where, "activity_label"), where, "activity_label") + ": " + ctx);
  for (const std::string& ending : texts_of(member(doc, "endings", where, "endings"), where, "endings"))
    item.choices.push_back(hellaswag_preprocess(ending));
  item.label = label_of(member(doc, "label", where, "label"), item.choices.size(), where, "label");
  return item;
}

ChoiceItem arc_item(const json::Value& doc, const std::string& where) {
  const json::Value& question = member(doc, "question", where, "question");
  if (!question.is_object())
    throw Error(where + ": \"question\" must be an object {\"stem\", \"choices\"}, got " +
                json::Value::kind_name(question.kind()));
  ChoiceItem item;
  item.query = "Question: " + text_of(member(question, "stem", where, "question.stem"), where, "question.stem") +
               "\nAnswer:";
  const json::Value& choices = member(question, "choices", where, "question.choices");
  if (!choices.is_array())
    throw Error(where + ": \"question.choices\" must be a list of {\"text\", \"label\"}, got " +
                json::Value::kind_name(choices.kind()));
  if (choices.size() == 0) throw Error(where + ": \"question.choices\" is empty: no choices");
  std::vector<std::string> labels;
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string field = "question.choices[" + std::to_string(i) + "]";
    if (!choices[i].is_object()) throw Error(where + ": \"" + field + "\" must be an object {\"text\", \"label\"}");
    const std::string text_field = field + ".text", label_field = field + ".label";
    item.choices.push_back(text_of(member(choices[i], "text", where, text_field.c_str()), where, text_field.c_str()));
    labels.push_back(text_of(member(choices[i], "label", where, label_field.c_str()), where, label_field.c_str()));
  }
  const std::string& key = text_of(member(doc, "answerKey", where, "answerKey"), where, "answerKey");
  const auto found = std::find(labels.begin(), labels.end(), key);
  if (found == labels.end()) {
    std::string all;
    for (const std::string& label : labels) all += (all.empty() ? "" : ", ") + json::quote(label);
    throw Error(where + ": \"answerKey\" " + json::quote(key) + " is none of the choices' labels (" + all + ")");
  }
  item.label = found - labels.begin();
  return item;
}

ChoiceItem choices_item(const json::Value& doc, const std::string& where) {
  ChoiceItem item;
  item.query = text_of(member(doc, "context", where, "context"), where, "context");
  item.choices = texts_of(member(doc, "choices", where, "choices"), where, "choices");
  item.label = label_of(member(doc, "label", where, "label"), item.choices.size(), where, "label");
  return item;
}

std::vector<ChoiceItem> parse_jsonl_task(TaskFormat format, const std::string& text, const std::string& source) {
  const std::string shape = format == TaskFormat::hellaswag
                                ? "{\"ctx_a\", \"ctx_b\", \"activity_label\", \"endings\", \"label\"}"
                            : format == TaskFormat::arc ? "{\"question\": {\"stem\", \"choices\"}, \"answerKey\"}"
                                                        : "{\"context\", \"choices\", \"label\"}";
  std::vector<ChoiceItem> items;
  for_each_jsonl_object(text, source, shape, [&](const json::Value& doc, const std::string& where, int64_t line) {
    check_not_other_format(doc, format, where);
    ChoiceItem item = format == TaskFormat::hellaswag ? hellaswag_item(doc, where)
                      : format == TaskFormat::arc     ? arc_item(doc, where)
                                                      : choices_item(doc, where);
    item.line = line;
    items.push_back(std::move(item));
  });
  return items;
}

std::vector<ChoiceItem> parse_mmlu(const std::string& text, const std::string& source) {
  const std::string description =
      "The following are multiple choice questions (with answers) about " + mmlu_subject(source) + ".\n\n";
  std::vector<ChoiceItem> items;
  for (const CsvRow& row : parse_csv(text, source)) {
    const std::string where = source + ": line " + std::to_string(row.line);
    if (row.fields.size() != 6)
      throw Error(where + ": " + std::to_string(row.fields.size()) +
                  (row.fields.size() == 1 ? " column" : " columns") + ", expected 6 (question, A, B, C, D, answer)");
    const std::string& answer = row.fields[5];
    if (answer.size() != 1 || answer[0] < 'A' || answer[0] > 'D')
      throw Error(where + ": the answer (column 6) " + json::quote(answer) + " is not one of A, B, C, D");
    ChoiceItem item;
    item.description = description;
    item.query = strip(row.fields[0]);
    for (int k = 0; k < 4; ++k) item.query += std::string("\n") + char('A' + k) + ". " + row.fields[1 + k];
    item.query += "\nAnswer:";
    item.choices = {"A", "B", "C", "D"};
    item.label = answer[0] - 'A';
    item.line = row.line;
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace

bool is_python_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

TaskFormat task_format_from_name(const std::string& name) {
  for (int i = 0; i < 4; ++i)
    if (name == kFormats[i]) return static_cast<TaskFormat>(i);
  throw Error("unknown task " + json::quote(name) + ": give hellaswag, arc, mmlu or choices");
}

std::string task_format_name(TaskFormat format) { return kFormats[static_cast<int>(format)]; }

std::string hellaswag_preprocess(const std::string& input) {
  std::string text = strip(input);
  replace_all(text, " [title]", ". ");
  std::string out;  // re.sub("\\[.*?\\]", "", text): "." does not match a newline
  for (size_t pos = 0; pos < text.size();) {
    const size_t close = text[pos] == '[' ? text.find_first_of("]\n", pos + 1) : std::string::npos;
    if (close != std::string::npos && text[close] == ']') {
      pos = close + 1;
      continue;
    }
    out += text[pos++];
  }
  replace_all(out, "  ", " ");  // one pass, as str.replace: "   " becomes "  "
  return out;
}

std::string python_capitalize(const std::string& text) {
  std::vector<uint32_t> points;
  if (!json::decode_utf8(text, points)) return text;  // not UTF-8: as it is
  std::string out;
  for (size_t i = 0; i < points.size(); ++i) json::append_utf8(out, i == 0 ? upper(points[i]) : lower(points[i]));
  return out;
}

std::string mmlu_subject(const std::string& path) {
  std::string name = std::filesystem::path(path).stem().string();
  for (const char* suffix : {"_test", "_dev", "_val"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      name.resize(name.size() - s.size());
      break;
    }
  }
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

std::vector<CsvRow> parse_csv(const std::string& text, const std::string& source) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  int64_t line = 1;
  bool in_quotes = false, quoted = false, row_has_text = false;
  auto end_field = [&] {
    row.fields.push_back(std::move(field));
    field.clear();
    quoted = false;
  };
  auto end_row = [&] {
    end_field();
    if (row_has_text || row.fields.size() > 1) rows.push_back(std::move(row));
    row = CsvRow{};
    row_has_text = false;
  };
  int64_t quote_line = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (row.fields.empty() && field.empty() && !row_has_text && !quoted) row.line = line;
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = row_has_text = true;
      quote_line = line;
    } else if (c == ',') {
      row_has_text = true;
      end_field();
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (c == '\r') ++i;
      end_row();
      ++line;
    } else {
      field += c;  // a quote inside an unquoted field is a character, as Python's csv reads it
      row_has_text = true;
    }
  }
  if (in_quotes)
    throw Error(source + ": line " + std::to_string(quote_line) + ": a quoted field is not closed before the file ends");
  if (!field.empty() || row_has_text || !row.fields.empty()) end_row();
  if (rows.empty()) throw Error(source + ": no rows (every line is blank)");
  return rows;
}

std::vector<ChoiceItem> parse_task(TaskFormat format, const std::string& text, const std::string& source) {
  std::vector<ChoiceItem> items =
      format == TaskFormat::mmlu ? parse_mmlu(text, source) : parse_jsonl_task(format, text, source);
  if (items.empty()) throw Error(source + ": no items (every line is blank)");
  return items;
}

TaskSpec parse_task_spec(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos)
    throw Error(json::quote(spec) + ": expected FORMAT:FILE, the format hellaswag, arc, mmlu or choices (choices:items.jsonl)");
  TaskFormat format;
  try {
    format = task_format_from_name(spec.substr(0, colon));
  } catch (const Error& e) {
    throw Error(json::quote(spec) + ": " + e.what());
  }
  if (colon + 1 == spec.size()) throw Error(json::quote(spec) + ": no file after the ':' (FORMAT:FILE)");
  return {format, spec.substr(colon + 1)};
}

std::vector<ChoiceItem> read_task(TaskFormat format, const std::string& path, const std::string& flag) {
  return parse_task(format, read_input_file(path, flag + " " + path), path);
}

std::string item_context(const std::vector<ChoiceItem>& items, size_t index, int64_t shots, uint64_t seed) {
  const ChoiceItem& item = items.at(index);
  std::string context = item.description;
  if (shots > 0 && items.size() > 1) {
    std::vector<size_t> others(items.size() - 1);
    std::iota(others.begin(), others.end(), size_t{0});
    for (size_t& i : others) i += i >= index ? 1 : 0;  // every index but the item's
    std::mt19937_64 gen(seed + index);
    const size_t k = std::min<size_t>(static_cast<size_t>(shots), others.size());
    for (size_t i = 0; i < k; ++i) {  // a partial Fisher-Yates shuffle: others[0..k) are the draw
      const size_t j = i + static_cast<size_t>(gen() % (others.size() - i));
      std::swap(others[i], others[j]);
      const ChoiceItem& shot = items[others[i]];
      context += shot.query + " " + shot.choices[static_cast<size_t>(shot.label)] + "\n\n";
    }
  }
  return context + item.query;
}

}  // namespace tg::train
