// The persistent cache's directory (see the header).
#include "cache/cache_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

namespace kiln::cache {

namespace {

constexpr std::string_view temporary_prefix = ".tmp-";

std::string temporary_name() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return std::string(temporary_prefix) + std::to_string(::getpid()) + "-" + std::to_string(salt) + "-" +
         std::to_string(counter.fetch_add(1));
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    done += static_cast<size_t>(wrote);
  }
  return true;
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string ownership_problem(const struct stat& status) {
  if (status.st_uid != ::geteuid())
    return "it belongs to user id " + std::to_string(status.st_uid) + ", not to this user (" +
           std::to_string(::geteuid()) + ")";
  if (status.st_mode & (S_IWGRP | S_IWOTH))
    return std::string("it is writable by ") + ((status.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " +
           mode_text(status.st_mode) + ")";
  return {};
}

}  // namespace

CacheDirectory::~CacheDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

std::string CacheDirectory::open(const std::string& path, bool create, bool shared) {
  path_ = path;
  if (create) {
    std::error_code error;
    std::filesystem::path location(path);
    if (location.has_parent_path() && !std::filesystem::exists(location.parent_path(), error))
      std::filesystem::create_directories(location.parent_path(), error);
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      return std::string("it cannot be created: ") + std::strerror(errno);
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    struct stat link {};
    bool symbolic = ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
    if (error == ELOOP || symbolic) return "it is a symbolic link";
    if (error == ENOTDIR) return "it is not a directory";
    return std::string("it cannot be opened: ") + std::strerror(error);
  }
  struct stat status {};
  std::string problem = ::fstat(fd, &status) != 0 ? std::string("it cannot be read: ") + std::strerror(errno)
                        : shared                  ? std::string()
                                                  : ownership_problem(status);
  if (!problem.empty()) {
    ::close(fd);
    return problem;
  }
  fd_ = fd;
  return {};
}

// Never through a symbolic link, and never blocking on a pipe someone put there.
std::string CacheDirectory::read(const std::string& name) const {
  int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw FileProblem("it is a symbolic link");
    if (errno == ENOENT) return {};
    throw ReadFailure(std::string("it cannot be opened: ") + std::strerror(errno));
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    throw FileProblem("it is not a regular file");
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(status.st_size));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    throw ReadFailure("it is too large to read into memory");
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

std::string CacheDirectory::write(const std::string& name, const std::string& bytes) const {
  std::string temporary = temporary_name();
  int fd = ::openat(fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + path_of(temporary) + ": " + std::strerror(errno);
  bool written = write_all(fd, bytes);
  written = ::close(fd) == 0 && written;
  // Two writers of one name write equivalent bytes; the last rename wins.
  if (!written || ::renameat(fd_, temporary.c_str(), fd_, name.c_str()) != 0) {
    int error = errno;
    ::unlinkat(fd_, temporary.c_str(), 0);
    return "cannot write " + name + ": " + std::strerror(error);
  }
  return {};
}

void CacheDirectory::append_byte(const std::string& name) const {
  int fd = ::openat(fd_, name.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t wrote = ::write(fd, "+", 1);
  ::close(fd);
}

void CacheDirectory::truncate(const std::string& name) const {
  int fd = ::openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

bool CacheDirectory::exists(const std::string& name) const {
  struct stat status {};
  return ::fstatat(fd_, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0;
}

bool CacheDirectory::remove(const std::string& name) const { return ::unlinkat(fd_, name.c_str(), 0) == 0; }

CacheDirectory::Status CacheDirectory::status(const std::string& name) const {
  struct stat status {};
  if (::fstatat(fd_, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) != 0) return {};
  return {static_cast<uint64_t>(status.st_size),
          static_cast<double>(status.st_mtim.tv_sec) + 1e-9 * static_cast<double>(status.st_mtim.tv_nsec)};
}

std::vector<std::string> CacheDirectory::names() const {
  std::vector<std::string> found;
  int fd = ::dup(fd_);
  if (fd < 0) return found;
  DIR* listing = ::fdopendir(fd);
  if (!listing) {
    ::close(fd);
    return found;
  }
  ::rewinddir(listing);
  while (dirent* item = ::readdir(listing)) found.emplace_back(item->d_name);
  ::closedir(listing);
  return found;
}

bool CacheDirectory::is_temporary(const std::string& name) { return name.starts_with(temporary_prefix); }

}  // namespace kiln::cache
