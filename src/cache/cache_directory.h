// The persistent cache's directory: opened once, its owner and mode checked
// on the open descriptor, and every file then reached through that
// descriptor by its bare name (openat, renameat, unlinkat), so renaming or
// replacing the directory's path afterwards cannot redirect a read or a
// write. Files are written atomically: a private temporary file, then a
// rename; a reader sees the old file or the new one, never part of either.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::cache {

/// A file is not what the cache may read (a symbolic link, a pipe): its
/// content is suspect.
class FileProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reading failed for a reason that says nothing about the file (too many
/// open files, no memory): the file is left alone.
class ReadFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CacheDirectory {
 public:
  CacheDirectory() = default;
  ~CacheDirectory();
  CacheDirectory(const CacheDirectory&) = delete;
  CacheDirectory& operator=(const CacheDirectory&) = delete;

  /// Opens `path` (made 0700 when missing and `create`); returns why it may
  /// not be used, or nothing. Unless `shared`, it must belong to this user
  /// and be writable by no one else (a shared directory holds signed entries
  /// only, so whoever else writes there cannot have code run).
  std::string open(const std::string& path, bool create, bool shared);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  std::string path_of(const std::string& name) const { return path_ + "/" + name; }

  /// The whole file, empty when there is none; throws FileProblem or ReadFailure.
  std::string read(const std::string& name) const;
  /// Replaces `name` atomically; returns why it could not, or nothing.
  std::string write(const std::string& name, const std::string& bytes) const;
  /// Appends one byte (hit counters: the size counts hits, the time is the last).
  void append_byte(const std::string& name) const;
  /// Creates or empties `name`.
  void truncate(const std::string& name) const;
  bool exists(const std::string& name) const;
  bool remove(const std::string& name) const;

  struct Status {
    uint64_t bytes = 0;
    double modified = 0;  // seconds since the epoch, with nanoseconds
  };
  Status status(const std::string& name) const;
  std::vector<std::string> names() const;

  /// Names of temporary files written here (abandoned ones are removed by eviction).
  static bool is_temporary(const std::string& name);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace kiln::cache
