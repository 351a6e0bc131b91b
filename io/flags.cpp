// io/flags.cpp — the flag table: parsing, --help, the exit codes.
#include "io/flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <new>
#include <ostream>
#include <sstream>
#include <utility>

namespace tg {

std::optional<int64_t> read_integer(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

namespace {

const Flag* find_flag(const std::vector<Flag>& flags, const std::string& name) {
  for (const Flag& f : flags)
    if (f.name == name) return &f;
  return nullptr;
}

std::string choices_str(const Flag& f) {  // "constant|cosine"
  std::string all;
  for (const std::string& c : f.choices) all += (all.empty() ? "" : "|") + c;
  return all;
}

std::string current_value(const Flag& f) {
  std::ostringstream os;
  std::visit([&](auto* p) { os << std::boolalpha << *p; }, f.value);
  return os.str();
}

int64_t parse_int(const std::string& flag, const std::string& text) {
  if (const std::optional<int64_t> v = read_integer(text)) return *v;
  throw UsageError("--" + flag + ": expected an integer, got '" + text + "'");
}

double parse_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw UsageError("--" + flag + ": expected a number, got '" + text + "'");
  return v;
}

void check_range(const Flag& f, double v, const std::string& text) {
  if (v < f.min || v > f.max) {
    std::ostringstream os;
    os << "--" << f.name << ": " << text << " is out of range [" << f.min << ", " << f.max << "]";
    throw UsageError(os.str());
  }
}

void set_value(const Flag& f, const std::string& text) {
  if (auto* p = std::get_if<int64_t*>(&f.value)) {
    const int64_t v = parse_int(f.name, text);
    check_range(f, static_cast<double>(v), text);
    **p = v;
  } else if (auto* p = std::get_if<double*>(&f.value)) {
    const double v = parse_double(f.name, text);
    check_range(f, v, text);
    **p = v;
  } else if (auto* p = std::get_if<std::string*>(&f.value)) {
    bool ok = f.choices.empty();
    for (const std::string& c : f.choices) ok = ok || c == text;
    if (!ok) throw UsageError("--" + f.name + ": expected one of " + choices_str(f) + ", got '" + text + "'");
    **p = text;
  }
}

// --help's table: each flag, its help and its default (defaults[i], as text).
void print_flags(std::ostream& os, const std::vector<Flag>& flags, const std::vector<std::string>& defaults) {
  for (size_t i = 0; i < flags.size(); ++i) {
    const Flag& f = flags[i];
    std::string left = "  --" + f.name;
    if (!std::holds_alternative<bool*>(f.value)) left += f.choices.empty() ? " VALUE" : " {" + choices_str(f) + "}";
    os << std::left << std::setw(34) << left << " " << f.help;
    if (!std::holds_alternative<bool*>(f.value) && !defaults[i].empty()) os << " (default " << defaults[i] << ")";
    os << "\n";
  }
  os << std::left << std::setw(34) << "  --help" << " this list\n";
}

}  // namespace

Flag int_flag(std::string name, int64_t* value, std::string help, double min, double max) {
  return Flag{std::move(name), value, std::move(help), min, max, {}};
}
Flag number_flag(std::string name, double* value, std::string help, double min, double max) {
  return Flag{std::move(name), value, std::move(help), min, max, {}};
}
Flag text_flag(std::string name, std::string* value, std::string help, std::vector<std::string> choices) {
  return Flag{std::move(name), value, std::move(help), 0, 0, std::move(choices)};
}
Flag switch_flag(std::string name, bool* value, std::string help) {
  return Flag{std::move(name), value, std::move(help), 0, 0, {}};
}

Flag threads_flag(int64_t* threads) {
  return int_flag("threads", threads, "threads for matrix products and loops (0 = all cores)", 0, 1024);
}
Flag seed_flag(int64_t* seed, std::string help) {
  return int_flag("seed", seed, std::move(help), 0, 9007199254740991.0);
}
Flag svg_flag(std::string* dir) {
  return text_flag("svg", dir, "also draw the attention weights as SVG heatmaps in this folder (made if needed)");
}
Flag dot_flag(std::string* file) {
  return text_flag("dot", file, "also write the graph backward walks to this file (draw it: dot -Tsvg FILE)");
}

std::vector<Flag> picture_flags(PictureOptions& o) { return {svg_flag(&o.svg), dot_flag(&o.dot)}; }

bool same_value(const Flag& a, const Flag& b) {
  return a.value.index() == b.value.index() &&
         std::visit([&](auto* pa) { return *pa == *std::get<decltype(pa)>(b.value); }, a.value);
}

void parse_flags(const std::vector<Flag>& flags, const std::vector<std::string>& args, bool* help,
                 std::vector<std::string>* given) {
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return;
    }
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "': flags start with --");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const Flag* f = find_flag(flags, name);
    if (!f) throw UsageError("unknown flag --" + name);
    if (given) given->push_back(name);
    if (auto* p = std::get_if<bool*>(&f->value)) {
      if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
      **p = true;
      continue;
    }
    if (eq != std::string::npos) {
      set_value(*f, arg.substr(eq + 1));
    } else {
      if (i + 1 >= args.size()) throw UsageError("--" + name + ": missing value");
      set_value(*f, args[++i]);
    }
  }
}

namespace {

thread_local std::vector<std::string> activities;  // the running ones, innermost last
thread_local std::string failed;                   // the innermost one an exception left

// " while <what the program was doing>", or "" when nothing says.
std::string while_doing() {
  const std::string what = failed_activity();
  return what.empty() ? "" : " while " + what;
}

}  // namespace

Activity::Activity(std::string what) : exceptions_at_start_(std::uncaught_exceptions()) {
  failed.clear();
  activities.push_back(std::move(what));
}

Activity::~Activity() {
  if (std::uncaught_exceptions() > exceptions_at_start_ && failed.empty()) failed = activities.back();
  activities.pop_back();
}

std::string failed_activity() {
  if (!failed.empty()) return failed;
  return activities.empty() ? "" : activities.back();
}

int run_program(const Program& program, int argc, char** argv, const std::function<int()>& run,
                std::vector<std::string>* given) {
  failed.clear();  // what an earlier run left (a test runs several)
  try {
    std::vector<std::string> defaults;  // for --help, before parsing changes them
    for (const Flag& f : program.flags) defaults.push_back(current_value(f));
    bool help = false;
    parse_flags(program.flags, std::vector<std::string>(argv + 1, argv + argc), &help, given);
    if (help) {
      std::cout << "usage: " << program.name << " [flags]\n\n" << program.about << "\n\n";
      print_flags(std::cout, program.flags, defaults);
      return 0;
    }
    return run();
  } catch (const UsageError& e) {
    std::cerr << program.name << ": " << e.what() << " (see --help)\n";
    return 2;
  } catch (const Error& e) {
    const std::string message = e.what();  // the allocator's "out of memory: cannot allocate N bytes"
    std::cerr << program.name << ": " << message << (message.rfind("out of memory", 0) == 0 ? while_doing() : "") << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << program.name << ": out of memory" << while_doing() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << program.name << ": unexpected error" << while_doing() << ": " << e.what() << "\n";
    return 1;
  }
}

int run_program_with_svg(const std::string& name, const std::string& about, int argc, char** argv,
                         const std::function<int(const std::string& svg_dir)>& run) {
  std::string svg;
  return run_program({name, about, {svg_flag(&svg)}}, argc, argv,
                     [&] {
                       if (svg.empty()) return run(svg);
                       const OutputFolder folder(svg, "--svg");
                       return run(folder.path());
                     });
}

namespace {

// dir and its missing parents, one mkdir at a time: made (optional) receives each folder that
// this call made, the outermost first, and nothing that was there before.
void make_folders(const std::string& dir, const std::string& flag, std::vector<std::string>* made) {
  std::filesystem::path so_far;
  std::error_code ec;
  for (const std::filesystem::path& part : std::filesystem::path(dir)) {
    so_far /= part;
    if (part.empty()) continue;  // "runs/a/" ends in an empty part
    const bool created = std::filesystem::create_directory(so_far, ec);
    if (ec) break;
    if (created && made) made->push_back(so_far.string());
  }
  if (ec || !std::filesystem::is_directory(dir)) {
    throw Error(flag + ": cannot make the folder '" + dir + "': " + (ec ? ec.message() : std::string("not a folder")));
  }
}

}  // namespace

bool was_given(const std::vector<std::string>& given, const std::string& flag) {
  return std::find(given.begin(), given.end(), flag) != given.end();
}

void require_names(const std::vector<std::string>& given, const std::vector<std::pair<std::string, std::string>>& flags) {
  for (const auto& [name, value] : flags)
    if (value.empty() && std::find(given.begin(), given.end(), name) != given.end())
      throw UsageError("--" + name + ": expected a file or folder name, got ''");
}

std::string prepare_output_dir(const std::string& dir, const std::string& flag) {
  make_folders(dir, flag, nullptr);
  return dir;
}

OutputFolder::OutputFolder(const std::string& dir, const std::string& flag) : dir_(dir) {
  try {
    make_folders(dir, flag, &made_);
  } catch (const Error&) {  // "runs/new/<a name too long>": runs/new was made before the error
    remove_if_empty();
    throw;
  }
}

OutputFolder::~OutputFolder() {
  if (std::uncaught_exceptions() > exceptions_) remove_if_empty();  // the scope is left by an error
}

void OutputFolder::remove_if_empty() const {
  std::error_code ec;  // remove() takes a folder only when it is empty
  for (auto p = made_.rbegin(); p != made_.rend() && std::filesystem::is_empty(*p, ec) && !ec; ++p)
    std::filesystem::remove(*p, ec);
}

}  // namespace tg
