// tests/test_util.h — small helpers the test files share.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/sysmacros.h>  // makedev
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/json.h"
#include "autograd/ops.h"
#include "autograd/runtime/parallel.h"

namespace tg::test {

// Restores the thread count (set_num_threads) that a test changes.
struct ThreadCountGuard {
  int saved = get_num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

// The message of the tg::Error fn() throws, or "" if it throws none (a check on the message
// then fails and prints it). Any other exception escapes and fails the test: tapegrad throws
// only tg::Error.
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// EXPECT_TRUE(has_part(message, "dim 3 out of range")): on failure prints both.
inline ::testing::AssertionResult has_part(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message: " << (message.empty() ? "(nothing was thrown)" : message)
                                       << "\n  lacks: " << part;
}

// Runs fn, which must throw a tg::Error whose message contains every one of parts.
template <class Fn>
void expect_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected a tg::Error, nothing was thrown";
  } catch (const Error& e) {
    for (const std::string& part : parts) EXPECT_TRUE(has_part(e.what(), part));
  }
}

// Deterministic standard-normal values from std::mt19937 (independent of tapegrad's own
// random ops, so tests of other ops do not depend on them).
inline Tensor normal_tensor(const Shape& shape, uint32_t seed, ScalarType dtype = kFloat64) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = normal(rng);
  return from_vector(values, shape, dtype);
}

// t's values as a float16 tensor, each the nearest float16 (searched among every finite half; a tie
// takes either): tapegrad widens float16 but never rounds to it (autograd/dtype.h), and tests need
// float16 weights. Widening the result back (.to(kFloat32)) gives its exact values.
inline Tensor nearest_float16(const Tensor& t) {
  static const std::vector<std::pair<float, uint16_t>> halves = [] {
    std::vector<std::pair<float, uint16_t>> sorted;
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const float v = float16_bits_to_float(static_cast<uint16_t>(bits));
      if (std::isfinite(v)) sorted.push_back({v, static_cast<uint16_t>(bits)});
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return sorted;
  }();
  const std::vector<float> values = t.to(kFloat32).contiguous().reshape({-1}).tolist<float>();
  Tensor out = empty(t.sizes(), kFloat16);
  Float16* o = out.data_ptr<Float16>();
  for (size_t i = 0; i < values.size(); ++i) {
    auto above = std::lower_bound(halves.begin(), halves.end(), values[i],
                                  [](const auto& h, float v) { return h.first < v; });
    if (above == halves.end() || (above != halves.begin() && values[i] - std::prev(above)->first < above->first - values[i]))
      --above;
    o[i] = Float16::from_bits(above->second);
  }
  return out;
}

// A fresh leaf that requires grad, with t's values (and storage).
inline Tensor leaf(const Tensor& t) {
  Tensor x = t.detach();
  x.requires_grad_(true);
  return x;
}

// A tensor written by tests/reference/*.py: {"shape": [...], "values": [16 hex digits of each
// value's float64 bit pattern]}, as float32 (float32 values widened exactly) unless told.
inline Tensor decode_reference(const json::Value& t, ScalarType dtype = kFloat32) {
  std::vector<double> values;
  for (size_t i = 0; i < t["values"].size(); ++i)
    values.push_back(std::bit_cast<double>(std::stoull(t["values"][i].as_string(), nullptr, 16)));
  Shape shape;
  for (size_t i = 0; i < t["shape"].size(); ++i) shape.push_back(t["shape"][i].as_int64());
  return from_vector(values, shape, dtype);
}

// |got - want| <= atol + rtol |want| everywhere; on failure names the element and both values.
inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  if (got.sizes() != want.sizes()) {
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  }
  const auto g = got.tolist<double>(), w = want.tolist<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want " << w[i]
                                           << " (|diff| " << std::abs(g[i] - w[i]) << " > " << atol << " + "
                                           << rtol << " * |want|)";
    }
  }
  return ::testing::AssertionSuccess();
}

// Same dtype, same shape and the same bytes in row-major order (NaN payloads and -0.0 included).
inline ::testing::AssertionResult same_bytes(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
  }
  if (actual.sizes() != expected.sizes()) {
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.sizes()) << ", expected " << shape_str(expected.sizes());
  }
  Tensor a = actual.detach().contiguous(), e = expected.detach().contiguous();
  const unsigned char* pa = static_cast<const unsigned char*>(a.raw_data());
  const unsigned char* pe = static_cast<const unsigned char*>(e.raw_data());
  for (size_t i = 0; i < a.nbytes(); ++i) {
    if (pa[i] != pe[i]) {
      size_t element = i / element_size(a.dtype());
      return ::testing::AssertionFailure() << "element " << element << " differs: " << a.view({-1}).at({static_cast<int64_t>(element)})
                                           << " vs expected " << e.view({-1}).at({static_cast<int64_t>(element)});
    }
  }
  return ::testing::AssertionSuccess();
}

// A new empty folder for a test's files, removed with everything in it at the end of the scope.
struct TempFolder {
  std::string path;
  TempFolder() {
    std::string pattern = ::testing::TempDir() + "tg_test_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path = pattern;
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }
  size_t count() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path), std::filesystem::directory_iterator()));
  }
};

// A folder's entries, each name with its size when a regular file, sorted: equal before and after
// a refused read when nothing in the folder was replaced, added or removed.
inline std::vector<std::string> folder_listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string() + (e.is_regular_file() ? ":" + std::to_string(e.file_size()) : ""));
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// (A new file each time: truncating a file that has data makes some filesystems, ext4 among them,
// flush it to disk, a thousand times slower when a test writes thousands of files.)
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A run folder's config.json made to say that the run planned `steps` in all: a finished shorter
// run becomes one stopped part way, as Ctrl-C or --max-minutes stop it, which --resume --steps
// <steps> continues as planned (a resume with another total goes on from the rate the run had
// reached instead: train::continued_schedule). For a run whose steps so far had the same rates
// under either plan (the warmup, the cosine's first step), or a test of the checkpoint alone.
inline void plan_steps(const std::string& run, int64_t steps) {
  const std::string path = run + "/config.json", key = "\"steps\": ";
  std::string config = read_bytes(path);
  const size_t at = config.find(key);
  if (at == std::string::npos) throw std::runtime_error(path + ": no \"steps\"");
  const size_t digits = at + key.size(), end = config.find_first_not_of("0123456789", digits);
  config.replace(digits, end - digits, std::to_string(steps));
  write_bytes(path, config);
}

// A null device (the same device as /dev/null) made at path, so that a test writes to a device
// without the system's own at stake. false where none can be made or opened there (not root,
// or a folder on a nodev mount): the test then skips.
inline bool make_null_device(const std::string& path) {
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

// What runs a built program: "" natively; in a cross build, the emulator that runs the tests
// themselves and a space ("qemu-aarch64 ", tests/CMakeLists.txt passes CMake's
// CMAKE_CROSSCOMPILING_EMULATOR), put before the program in a command.
inline std::string program_launcher() {
#ifdef TG_PROGRAM_LAUNCHER
  return TG_PROGRAM_LAUNCHER " ";
#else
  return "";
#endif
}

// Runs a built program (a path, then its arguments, each quoted for the shell; `environment`:
// NAME=value settings for it alone) and collects what it prints on stdout and stderr together,
// and its exit code (-1 if it did not exit normally).
struct ProgramRun {
  int exit_code = -1;
  std::string output;
};
inline ProgramRun run_program(const std::string& program, const std::vector<std::string>& arguments,
                              const std::vector<std::string>& environment = {}) {
  auto quoted = [](const std::string& s) {  // 'it'\''s' for it's
    std::string q = "'";
    for (char c : s) {
      if (c == '\'') q.append("'\\''");
      else q.push_back(c);
    }
    q.push_back('\'');
    return q;
  };
  std::string command;
  for (const std::string& setting : environment) {  // NAME='value': a quoted name is no assignment
    const size_t eq = setting.find('=');
    command.append(setting.substr(0, eq + 1)).append(quoted(setting.substr(eq + 1))).append(" ");
  }
  command += program_launcher() + quoted(program);
  for (const std::string& a : arguments) command.append(" ").append(quoted(a));
  command += " 2>&1";
  ProgramRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// A program's summary: the last line of its output, parsed; lines after it that are notes on
// stderr ("evaluate: note: ...", which the merged output may put last) are passed over.
inline json::Value last_json_line(const std::string& output) {
  std::string text = output;
  for (;;) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const size_t begin = text.rfind('\n') + 1;  // npos + 1 == 0: the only line
    if (text.find(": note: ", begin) == std::string::npos) return json::parse(text.substr(begin), "the program's last line");
    text.erase(begin);
  }
}

// The path of an example program (tests/CMakeLists.txt passes the folder), or "" when it was
// not built (TG_BUILD_EXAMPLES=OFF): tests that need it then skip.
inline std::string example_program(const std::string& name) {
  const std::string path = std::string(TG_EXAMPLES_DIR) + "/" + name;
  return std::filesystem::exists(path) ? path : "";
}

}  // namespace tg::test
