// train/task_formats.h — the multiple-choice data sets as their authors publish them, and each
// item's prompt and choices exactly as lm-evaluation-harness's task definitions write them
// (lm_eval/tasks/hellaswag/utils.py, arc/arc_easy.yaml, mmlu/default/_default_template_yaml).
//
// Read first: TaskFormat (each data set's file, query and choices), then item_context (the prompt
// an item is scored with, its shots); read_task reads a file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tg::train {

// The formats, each file as its authors publish it, and the harness's query and choices:
//
//   hellaswag  hellaswag_val.jsonl: {"ctx_a", "ctx_b", "activity_label", "endings": [4], "label"}
//              query   = preprocess(activity_label + ": " + ctx_a + " " + capitalize(ctx_b))
//              choices = preprocess(ending), each
//              preprocess: strip; " [title]" -> ". "; remove every "[...]" (shortest); "  " -> " "
//   arc        AI2's ARC jsonl: {"question": {"stem", "choices": [{"text", "label"}]}, "answerKey"}
//              query   = "Question: " + stem + "\nAnswer:"; choices = the texts; the label is the
//              place of answerKey among the choices' labels ("A".."E" or "1".."4")
//   mmlu       the original per-subject CSV (question,A,B,C,D,answer; no header row; RFC 4180
//              quoting), the subject from the file name: high_school_physics_test.csv ->
//              "high school physics"
//              description = "The following are multiple choice questions (with answers) about "
//                            + subject + ".\n\n"
//              query   = strip(question) + "\nA. " + A + "\nB. " + B + "\nC. " + C + "\nD. " + D + "\nAnswer:"
//              choices = "A", "B", "C", "D"
//   choices    a generic JSONL: {"context": str, "choices": [str, ...], "label": int}; the query is
//              the context as given
enum class TaskFormat { hellaswag, arc, mmlu, choices };
// "hellaswag", "arc", "mmlu", "choices" <-> the enum; another name is an Error listing the four.
TaskFormat task_format_from_name(const std::string& name);
std::string task_format_name(TaskFormat format);

struct ChoiceItem {
  std::string description;           // put before everything (mmlu's); "" for the others
  std::string query;                 // the harness's doc_to_text
  std::vector<std::string> choices;  // its doc_to_choice (at least one)
  int64_t label = 0;                 // the right choice, in [0, choices.size())
  int64_t line = 0;                  // 1-based, the item's (first) line in its file
};

// train_gpt's --eval-task FORMAT:FILE, split at its first ':' ("hellaswag:hellaswag_val.jsonl"); a
// spec without a ':', an unknown format or no file is an Error saying what to give.
struct TaskSpec {
  TaskFormat format;
  std::string path;
};
TaskSpec parse_task_spec(const std::string& spec);

// The items of the file at path (read through read_input_file; its errors name `flag` and the
// file); at least one.
// Bad input is one tg::Error naming the file, the line and the field:
//   hellaswag_val.jsonl: line 3: "label" 4 is out of range [0, 4)
//   arc.jsonl: line 2: "question.choices" is empty: no choices
//   hellaswag_val.jsonl: line 5: an ARC line ("question", "answerKey"), not a hellaswag one: the file mixes formats
//   high_school_physics_test.csv: line 7: 5 columns, expected 6 (question, A, B, C, D, answer)
std::vector<ChoiceItem> read_task(TaskFormat format, const std::string& path, const std::string& flag = "--data");
// The same from the file's text; source names the file in errors (and gives mmlu its subject).
std::vector<ChoiceItem> parse_task(TaskFormat format, const std::string& text, const std::string& source);

// What Python's str.strip() takes away, of the bytes a data set holds: ASCII's whitespace and
// \x1c-\x1f (Unicode's other spaces are left).
bool is_python_space(char c);

// The harness's HellaSwag preprocess (TaskFormat, above), and Python's str.capitalize, which
// upper-cases the first character and lower-cases all the rest; here that is done for ASCII and
// Latin-1 letters (what HellaSwag holds); other letters stay as written.
std::string hellaswag_preprocess(const std::string& text);
std::string python_capitalize(const std::string& text);
// "dir/high_school_physics_test.csv" -> "high school physics" (a _test, _dev or _val suffix goes).
std::string mmlu_subject(const std::string& path);

// RFC 4180: each record's fields, and the line its record starts on. A quoted field may hold
// commas, newlines and "" (one quote); a record ends at "\n" or "\r\n"; blank lines are skipped.
struct CsvRow {
  std::vector<std::string> fields;
  int64_t line = 0;
};
std::vector<CsvRow> parse_csv(const std::string& text, const std::string& source);

// The text the model reads before item `index`'s choices (the prompt of an item): the description,
// then `shots` (--shots) solved other items, each query + " " + its answer + "\n\n" (the harness's
// target and few-shot delimiters; fewer when the file has fewer others), then the item's query.
// The shots come from the same file, never the item itself: for item i, a partial Fisher-Yates
// shuffle of the other items' indices by std::mt19937_64 seeded with seed + i. The harness draws
// them from another split instead (HellaSwag and ARC: the train split, at random with its own
// seed; MMLU: the dev split's first K), so a --shots score is comparable with itself, not with a
// published few-shot figure.
std::string item_context(const std::vector<ChoiceItem>& items, size_t index, int64_t shots, uint64_t seed);

}  // namespace tg::train
