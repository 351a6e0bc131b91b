// autograd/io/atomic_file.h — writing a file so that nobody ever sees half of it.
//
// The bytes go to a temporary file next to the target ("<target>.tmp-1a2b3c4d"); commit()
// flushes it to disk (fsync), renames it over the target and syncs the folder, so the rename is
// on disk too. Until commit, a file already under the target's name is untouched; if the
// writer is destroyed without commit (an error, an exception) the temporary file is removed.
// A program killed half-way leaves the old file (or none) and at worst a stray .tmp- file,
// never a truncated target.
//
// Several files that belong together (a checkpoint) are written with prepare() on each first
// (all data on disk under temporary names), then commit() on each: the renames are all that is
// left between the old set and the new one.
//
//   tg::AtomicFile f("model.safetensors", "save_safetensors");
//   f.write(header.data(), header.size());
//   f.commit();
//
// Errors are tg::Error "<who>: <target>: <what failed>: <reason>".
#pragma once
#include <cstdint>
#include <string>

namespace tg {

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
  void prepare();  // fsync and close the temporary file (commit does it when not done)
  void commit();   // rename over the target, then sync the folder
  const std::string& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string target_, temp_path_, who_;
  int fd_ = -1;
  bool renamed_ = false;
};

// The whole of contents to path, atomically.
void write_file_atomically(const std::string& path, const std::string& contents, const std::string& who);

}  // namespace tg
