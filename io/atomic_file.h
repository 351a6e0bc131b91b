// io/atomic_file.h — writing a file so that nobody ever sees half of it, and so that
// nothing the user had under that name is lost.
//
// The bytes go to a temporary file next to the target ("<target>.tmp-1a2b3c4d"); commit()
// flushes it to disk (fsync), renames it over the target and syncs the folder, so the rename is
// on disk too. Until commit, a file already under the target's name is untouched; if the
// writer is destroyed without commit (an error, an exception) the temporary file is removed.
//
//   tg::AtomicFile f("model.safetensors", "save_safetensors");
//   f.write(header.data(), header.size());
//   f.commit();
//
// Read the class AtomicFile first, then its constructor and commit() in atomic_file.cpp.
#pragma once
#include <cstdint>
#include <string>

namespace tg {

// What is under the target's name decides where the bytes go:
//   nothing, or a regular file   the atomic write above
//   a symbolic link              the link stays; the file it points to (followed through every
//                                link, created if missing) is the one written atomically, with
//                                its temporary file next to it, as a shell's > writes through it
//   a FIFO or character device   a stream the user named (/dev/null, /dev/stdout, a named pipe;
//   (or a link to one)           the same through a link): the bytes are written into it as they
//                                come, nothing is renamed over it and no temporary file is made;
//                                commit closes it (what went out before an error stays out)
//   a folder                     an Error: "<target>: is a folder, not a file"
//   a block device or a socket   an Error: nothing is written over it
//
// A program killed half-way leaves the old file (or none) and at worst a stray .tmp- file,
// never a truncated target; the next write of the same target removes such strays (a writer
// holds a lock, flock, on its temporary file for as long as it lives: one that nobody holds is
// a killed write's, and only names of exactly that pattern are looked at).
//
// Errors are tg::Error "<who>: <target>: <what failed>: <reason>".
class AtomicFile {
 public:
  AtomicFile(const std::string& target, const std::string& who);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  ~AtomicFile();

  void write(const void* data, uint64_t count);
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  // Several files that belong together (a checkpoint) are written with prepare() on each first
  // (all data on disk under temporary names), then commit() on each: the renames are all that is
  // left between the old set and the new one.
  void prepare();  // fsync the temporary file (commit does it when not done); no write after it
  void commit();   // rename over the target, then sync the folder (a stream: close it)
  const std::string& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const;
  [[noreturn]] void fail(const std::string& what) const;
  std::string follow_links(const std::string& target) const;
  void open_stream(unsigned mode);
  void create_temporary();

  std::string target_;     // as given: errors name it
  std::string path_;       // the file replaced: target_, or the file a symbolic link there points to
  std::string temp_path_;  // "" for a stream
  std::string who_;
  int fd_ = -1;
  bool prepared_ = false, renamed_ = false, stream_ = false;
};

// The whole of contents to path, atomically.
void write_file_atomically(const std::string& path, const std::string& contents, const std::string& who);

// Removes the temporary files ("<path>.tmp-" and 8 hex digits) that writes of path killed
// before their commit left in its folder: those no live AtomicFile holds. Nothing else is
// touched, and a file that cannot be checked is left. AtomicFile does it for its own target;
// a program calls it for the files of a folder it resumes from.
void remove_stale_temporaries(const std::string& path);

// The path of the file called name in the folder dir ("run" and "loss.csv" give "run/loss.csv").
std::string path_in(const std::string& dir, const std::string& name);

}  // namespace tg
