// io/user_file.cpp — see user_file.h: check the kind of file, open without blocking,
// check again on the descriptor, read.
#include "io/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "autograd/error.h"

namespace tg {

namespace {

// Why a file of this mode is not read ("" for a regular file).
std::string kind_problem(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "is a folder, not a file";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), not a file";
  if (S_ISCHR(mode)) return "is a character device, not a file";
  if (S_ISBLK(mode)) return "is a block device, not a file";
  if (S_ISSOCK(mode)) return "is a socket, not a file";
  return "is not a regular file";
}

// stat's failure in words: a missing file (or a missing folder on the way) is "no such file".
std::string stat_problem(int error) {
  if (error == ENOENT || error == ENOTDIR) return "no such file";
  return std::string("cannot open it: ") + std::strerror(error);
}

}  // namespace

std::string user_file_problem(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return stat_problem(errno);
  return kind_problem(info.st_mode);
}

UserFile::UserFile(const std::string& path, const std::string& who) : who_(who.empty() ? path : who) {
  // checked before the open: opening a FIFO for reading would wait for a writer
  if (const std::string problem = user_file_problem(path); !problem.empty()) throw Error(who_ + ": " + problem);
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw Error(who_ + ": " + stat_problem(errno));
  struct stat info;
  // checked again on what was opened: the path may have been replaced since the first check
  const std::string problem = ::fstat(fd_, &info) != 0 ? stat_problem(errno) : kind_problem(info.st_mode);
  if (!problem.empty()) {
    ::close(fd_);
    throw Error(who_ + ": " + problem);
  }
  size_ = static_cast<uint64_t>(info.st_size);
}

UserFile::~UserFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool UserFile::read_at(uint64_t offset, void* destination, uint64_t count) const {
  char* out = static_cast<char*>(destination);
  while (count > 0) {
    const size_t chunk = static_cast<size_t>(count < (uint64_t{1} << 30) ? count : uint64_t{1} << 30);
    const ssize_t got = ::pread(fd_, out, chunk, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(who_ + ": read error at byte " + std::to_string(offset) + ": " + std::strerror(errno));
    if (got == 0) return false;
    out += got;
    offset += static_cast<uint64_t>(got);
    count -= static_cast<uint64_t>(got);
  }
  return true;
}

std::string UserFile::read_all() const { return read_until(-1); }

std::string UserFile::read_first_line() const { return read_until('\n'); }

std::string UserFile::read_until(int stop) const {
  std::string bytes;
  char buffer[1 << 16];
  for (uint64_t offset = 0;;) {
    const ssize_t got = ::pread(fd_, buffer, sizeof buffer, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(who_ + ": read error at byte " + std::to_string(offset) + ": " + std::strerror(errno));
    if (got == 0) return bytes;
    const char* end = buffer + got;
    const char* found = stop < 0 ? end : static_cast<const char*>(std::memchr(buffer, stop, static_cast<size_t>(got)));
    bytes.append(buffer, static_cast<size_t>((found ? found : end) - buffer));
    if (found && found != end) return bytes;
    offset += static_cast<uint64_t>(got);
  }
}

std::string read_user_file(const std::string& path, const std::string& who) { return UserFile(path, who).read_all(); }

std::string read_input_file(const std::string& path, const std::string& who) {
  std::string bytes = read_user_file(path, who);
  if (bytes.empty()) throw Error((who.empty() ? path : who) + ": the file is empty");
  return bytes;
}

std::vector<std::string_view> text_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find_first_of("\r\n", start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
    if (end + 1 < text.size() && text[end] == '\r' && text[end + 1] == '\n') ++start;  // "\r\n" is one line end
  }
  return lines;
}

}  // namespace tg
