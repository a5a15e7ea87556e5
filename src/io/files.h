// File helpers shared by the .npy and safetensors formats: atomic writes and
// bounded reads that turn every failure into a kiln::Error.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/array.h"

namespace kiln::io {

/// What each format calls a dtype: NumPy's descr (bf16, which NumPy lacks,
/// is '|V2': NumPy sees the raw 16-bit patterns) and safetensors' code.
/// A dtype's name in each format; empty where the format has none.
struct DTypeNames {
  const char* npy;
  const char* safetensors;
};
DTypeNames dtype_names(DType dtype);

/// Writes the concatenation of `chunks` to `path` through a temporary file in
/// the same directory and a rename, so readers see the old file or the whole
/// new one, never a partial write. Errors name `operation`.
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& chunks, const char* operation,
                           Location where);

/// A file opened for reading, with its size known up front so that sizes read
/// from (possibly hostile) headers can be checked before anything is allocated.
class InputFile {
 public:
  InputFile(const std::string& path, const char* operation, Location where);
  uint64_t size() const { return size_; }
  /// Reads exactly `count` bytes at `offset`; throws if the file is shorter.
  void read(uint64_t offset, void* out, uint64_t count, const char* what);

 private:
  std::string path_;
  const char* operation_;
  Location where_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

}  // namespace kiln::io
