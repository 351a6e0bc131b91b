// io/atomic_file.cpp — temporary file, fsync, rename, fsync of the folder; streams
// written in place; killed writes' temporary files found by their lock.
#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "autograd/error.h"

namespace tg {

namespace {

namespace fs = std::filesystem;

constexpr size_t kSuffixDigits = 8;  // ".tmp-" and 8 hex digits

bool is_temporary_of(const std::string& name, const std::string& prefix) {
  if (name.size() != prefix.size() + kSuffixDigits || name.compare(0, prefix.size(), prefix) != 0) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Takes the writer's lock on its new temporary file. False when the file was removed before the
// lock was taken (a stale-file sweep found it unlocked): the caller makes another one. Where the
// filesystem has no locks the file goes unlocked, and sweeps there leave every file alone.
bool lock_new_temporary(int fd) {
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return true;
  }
  struct stat st;
  return ::fstat(fd, &st) == 0 && st.st_nlink > 0;
}

// Removes path when it is a regular file no writer holds a lock on.
void remove_if_abandoned(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
  ::close(fd);
}

const char* kind_of(unsigned mode) {
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void remove_stale_temporaries(const std::string& path) {
  const fs::path target(path);
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp-";
  std::vector<fs::path> found;  // listed first, removed after: nothing is removed while the folder is read
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (is_temporary_of(it->path().filename().string(), prefix)) found.push_back(it->path());
  for (const fs::path& p : found) remove_if_abandoned(p);
}

AtomicFile::AtomicFile(const std::string& target, const std::string& who) : target_(target), who_(who) {
  struct stat st;  // what is there, through any symbolic links (/dev/stdout is one)
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    path_ = target;
    open_stream(st.st_mode);
    return;
  }
  path_ = follow_links(target);
  remove_stale_temporaries(path_);
  create_temporary();
}

// The file a symbolic link at target points to, through every link (relative ones from the
// link's folder); target itself when it is no link.
std::string AtomicFile::follow_links(const std::string& target) const {
  fs::path path = target;
  for (int hops = 0; hops < 40; ++hops) {  // Linux's limit for a path
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) return path.string();
    const fs::path to = fs::read_symlink(path, ec);
    if (ec) fail("cannot read the symbolic link", ec.value());
    path = to.is_absolute() ? to : path.parent_path() / to;
  }
  fail("cannot follow its symbolic links", ELOOP);
}

void AtomicFile::open_stream(unsigned mode) {
  if (S_ISDIR(mode)) fail("is a folder, not a file", 0);
  if (!S_ISFIFO(mode) && !S_ISCHR(mode))
    fail(std::string("is ") + kind_of(mode) + ", not a file: it is not written over", 0);
  stream_ = true;
  do {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);  // a FIFO waits here for its reader
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) fail("cannot open it for writing");
}

void AtomicFile::create_temporary() {
  std::random_device random;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%08x", static_cast<unsigned>(random()));
    temp_path_ = path_ + suffix;
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
    if (fd_ >= 0 && !lock_new_temporary(fd_)) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  if (fd_ < 0) fail("cannot create a temporary file " + temp_path_);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)), path_(std::move(other.path_)), temp_path_(std::move(other.temp_path_)),
      who_(std::move(other.who_)), fd_(other.fd_), prepared_(other.prepared_), renamed_(other.renamed_),
      stream_(other.stream_) {
  other.fd_ = -1;
  other.renamed_ = true;  // the moved-from object owns no temporary file any more
}

AtomicFile::~AtomicFile() {
  if (!renamed_ && !stream_) ::unlink(temp_path_.c_str());  // before the lock goes with the close
  if (fd_ >= 0) ::close(fd_);
}

void AtomicFile::fail(const std::string& what, int error) const {
  throw Error(who_ + ": " + target_ + ": " + what + (error ? std::string(": ") + std::strerror(error) : ""));
}

void AtomicFile::fail(const std::string& what) const { fail(what, errno); }

void AtomicFile::write(const void* data, uint64_t count) {
  if (prepared_ || fd_ < 0) fail("write after prepare", 0);
  const char* in = static_cast<const char*>(data);
  while (count > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(count, 1u << 30));
    const ssize_t wrote = ::write(fd_, in, chunk);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) fail("cannot write " + (stream_ ? std::string("to it") : temp_path_));
    in += wrote;
    count -= static_cast<uint64_t>(wrote);
  }
}

void AtomicFile::prepare() {
  if (prepared_ || fd_ < 0) return;
  // The file stays open, and locked, until commit: a sweep must not take it for a killed write's.
  if (!stream_ && ::fsync(fd_) != 0) fail("cannot sync " + temp_path_);
  prepared_ = true;
}

void AtomicFile::commit() {
  prepare();
  const int fd = fd_;
  fd_ = -1;
  if (stream_) {
    renamed_ = true;
    if (fd >= 0 && ::close(fd) != 0) fail("cannot close it");
    return;
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    fd_ = fd;  // the destructor removes the temporary file
    fail("cannot rename " + temp_path_ + " to " + (path_ == target_ ? std::string("it") : path_));
  }
  renamed_ = true;
  ::close(fd);  // synced above: no error is left to report
  const std::string folder = fs::path(path_).parent_path().string();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool synced = dir >= 0 && ::fsync(dir) == 0;
  if (dir >= 0) ::close(dir);
  if (!synced) fail("saved, but cannot sync its folder");
}

void write_file_atomically(const std::string& path, const std::string& contents, const std::string& who) {
  AtomicFile file(path, who);
  file.write(contents);
  file.commit();
}

std::string path_in(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

}  // namespace tg
