// Atomic file replacement and checked reads.
#include "io/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error_format.h"

namespace kiln::io {

DTypeNames dtype_names(DType dtype) {
  switch (dtype) {
    case DType::bool_: return {"|b1", "BOOL"};
    case DType::i8: return {"|i1", "I8"};
    case DType::i16: return {"<i2", "I16"};
    case DType::i32: return {"<i4", "I32"};
    case DType::i64: return {"<i8", "I64"};
    case DType::u8: return {"|u1", "U8"};
    case DType::u16: return {"<u2", "U16"};
    case DType::u32: return {"<u4", "U32"};
    case DType::u64: return {"<u8", "U64"};
    case DType::f16: return {"<f2", "F16"};
    case DType::bf16: return {"|V2", "BF16"};
    case DType::f32: return {"<f4", "F32"};
    case DType::f64: return {"<f8", "F64"};
    // The safetensors format names complex64 ("C64": two f32, real part
    // first) and no wider complex type.
    case DType::c64: return {"<c8", "C64"};
    case DType::c128: return {"<c16", ""};
  }
  return {"", ""};
}

namespace {
std::string system_error() { return std::strerror(errno); }

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return true;
}
}  // namespace

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& chunks, const char* operation,
                           Location where) {
  static std::atomic<uint64_t> counter{0};
  // The temporary lives next to the target so the rename stays on one file
  // system; O_EXCL keeps concurrent writers (threads or processes) apart.
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0)
    detail::raise(operation, "cannot create '" + temporary + "' to write '" + path + "': " + system_error(), where,
                  "check that the directory exists and is writable");
  bool ok = true;
  for (std::string_view chunk : chunks) ok = ok && write_all(fd, chunk);
  // Flush to disk before the rename so a crash cannot leave a renamed but empty file.
  ok = ok && ::fsync(fd) == 0;
  std::string reason = ok ? "" : system_error();
  if (::close(fd) != 0 && ok) {
    ok = false;
    reason = system_error();
  }
  if (ok && std::rename(temporary.c_str(), path.c_str()) != 0) {
    ok = false;
    reason = system_error();
  }
  if (!ok) {
    ::unlink(temporary.c_str());
    detail::raise(operation, "failed writing '" + path + "': " + reason, where,
                  "check free disk space and that the path is a writable file");
  }
}

InputFile::InputFile(const std::string& path, const char* operation, Location where)
    : path_(path), operation_(operation), where_(where) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    detail::raise(operation, "'" + path + "' is not a readable file" + (error ? ": " + error.message() : ""), where,
                  "check the path");
  size_ = std::filesystem::file_size(path, error);
  if (error) detail::raise(operation, "cannot read the size of '" + path + "': " + error.message(), where);
  in_.open(path, std::ios::binary);
  if (!in_) detail::raise(operation, "cannot open '" + path + "': " + system_error(), where, "check the permissions");
}

void InputFile::read(uint64_t offset, void* out, uint64_t count, const char* what) {
  if (offset > size_ || count > size_ - offset)
    detail::raise(operation_,
                  "'" + path_ + "' is truncated: its " + what + " needs " + std::to_string(count) +
                      " bytes at offset " + std::to_string(offset) + " but the file has " + std::to_string(size_),
                  where_, "the file is damaged or was not completely written; write it again");
  if (count == 0) return;
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(offset));
  in_.read(static_cast<char*>(out), static_cast<std::streamsize>(count));
  if (!in_) detail::raise(operation_, "failed reading '" + path_ + "' (" + what + ")", where_);
}

}  // namespace kiln::io
