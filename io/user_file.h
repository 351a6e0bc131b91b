// io/user_file.h — opening a file the user named (a model's weights, a config.json, a
// tokenizer, training text) for reading, so that a wrong kind of path is an error, never a hang.
//
// A path can name things that are not files: a folder, a FIFO (named pipe: open() waits for a
// writer that may never come), a character device (/dev/zero: reading never ends), a socket. The
// path is checked first (stat, following links) and refused unless it is a regular file; then it
// is opened with O_NONBLOCK (so that a FIFO put there in between does not block the open) and
// checked again on the open descriptor (what was opened is what is read). Every reader of a user
// file goes through here, so every one says the same thing for the same problem:
//   model.safetensors: no such file
//   run/config.json: is a folder, not a file
//   model.safetensors: is a FIFO (named pipe), not a file
//   model.safetensors: is a character device, not a file
// Each message starts with `who`: the path itself, or the path with the program or flag that
// names it ("--data x.txt", "load_safetensors: x.safetensors").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg {

// An open regular file, read-only; closed when the object goes.
class UserFile {
 public:
  // Opens path (errors as above, who defaulting to path).
  explicit UserFile(const std::string& path, const std::string& who = "");
  UserFile(const UserFile&) = delete;
  UserFile& operator=(const UserFile&) = delete;
  ~UserFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // at the time of the open
  // count bytes from offset into destination; false when the file ends first (an Error on a read error)
  bool read_at(uint64_t offset, void* destination, uint64_t count) const;
  // every byte of the file
  std::string read_all() const;
  // the bytes before the first '\n' (all of them when there is none)
  std::string read_first_line() const;

 private:
  std::string read_until(int stop) const;  // the bytes before the first `stop` (-1: to the end)

  std::string who_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// What is wrong with path as a file to read ("no such file", "is a folder, not a file", ...), or ""
// when it is a regular file (links followed). For callers that ask before they decide what to read.
std::string user_file_problem(const std::string& path);

// The bytes of the file at path (UserFile's errors).
std::string read_user_file(const std::string& path, const std::string& who = "");
// The same for a file handed in as input (training text, a tokenizer, chat messages), which must
// hold something: an empty one is an Error "<who>: the file is empty".
std::string read_input_file(const std::string& path, const std::string& who = "");

// The lines of a text file's bytes as Python's text mode reads them (universal newlines): "\n",
// "\r\n" and a lone "\r" each end a line and are not part of it, and a last line without one is a
// line too: "a\rb", "a\r\nb\r\n" and "a\nb" are all {"a", "b"}. Every line-based file a user
// hands in (merges.txt, vocab.bpe, JSONL examples) is split here, so a file saved with old Mac or
// Windows line ends reads as the same lines, never as one long line.
std::vector<std::string_view> text_lines(std::string_view text);

}  // namespace tg
