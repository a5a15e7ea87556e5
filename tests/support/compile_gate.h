// Helpers of the tier tests: a gate that holds background compiles, so that
// "before the optimized code is ready" is deterministic, and results as bytes.
#pragma once

#include <kiln/kiln.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cache/tiered_compile.h"
#include "core/array_impl.h"

namespace kiln::testing {

// Holds background compiles before they start until opened.
class CompileGate {
 public:
  CompileGate() {
    cache::set_background_compile_fault([this](const ir::Graph&) {
      std::unique_lock lock(mutex_);
      opened_.wait(lock, [&] { return open_; });
    });
  }
  ~CompileGate() {
    open();
    wait_for_background_compiles();
    cache::set_background_compile_fault(nullptr);
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// Bit for bit as kiln means it (tests/ops/dtype_families.h): every NaN
// equals every NaN, whatever its sign and payload (native code's 0/0 is
// x86's negative default NaN, a reference kernel's may be positive).
inline std::string bytes_of(const Array& array) {
  size_t size = static_cast<size_t>(array.size()) * dtype_size(array.dtype());
  std::string bytes(size, '\0');
  if (size) std::memcpy(bytes.data(), detail::impl(array)->data<char>(), size);
  if (!is_floating(array.dtype())) return bytes;
  std::vector<double> values = array.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i)
    if (std::isnan(values[i]))
      std::memset(bytes.data() + i * dtype_size(array.dtype()), 0xff, dtype_size(array.dtype()));
  return bytes;
}

}  // namespace kiln::testing
