// What the persistent cache tests share: a private cache directory per
// test, fresh jitted calls that forget every in-memory executable (as a
// restarted process does), child processes, and reading files.
#pragma once

#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/llvm/backend.h"
#include "backend/llvm/kernel_cache.h"
#include "cache/persistent_cache.h"
#include "telemetry/telemetry.h"

namespace kiln::testing {

namespace fs = std::filesystem;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Runs `command` with a shell; returns its exit status and standard output.
inline std::pair<int, std::string> run(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, output};
  std::array<char, 4096> chunk;
  while (size_t got = std::fread(chunk.data(), 1, chunk.size(), pipe)) output.append(chunk.data(), got);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// A private directory of its own per test, the process's persistent cache
// pointed at it, and the in-memory caches emptied on both sides.
class PersistentCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-persistent-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
    use(directory_);
  }
  void TearDown() override {
    cache::reset_persistent_cache(cache::PersistentOptions{.enabled = false});
    telemetry::set_log_mask(telemetry::log_storms);
    forget_in_memory();
    std::error_code error;
    ::chmod(directory_.c_str(), 0700);
    fs::remove_all(directory_, error);
  }

  static void use(const std::string& directory, uint64_t max_bytes = uint64_t{1} << 30) {
    cache::reset_persistent_cache(
        cache::PersistentOptions{.enabled = true, .directory = directory, .max_bytes = max_bytes});
    forget_in_memory();
  }
  // What a restarted process has: no executable, no kernel in memory.
  static void forget_in_memory() {
    clear_graph_cache();
    llvm_backend::clear_kernel_cache();
  }

  struct Run {
    std::vector<float> result;
    CacheStats stats;
  };
  // One call of a fresh jitted function; the function and its executables
  // are gone when this returns, as when a process ends.
  static Run call(float offset = 1.0f, int64_t size = 64) {
    auto fn = jit([offset](const Array& x) { return tanh(x * 2.0f + offset) * sum(x); }, {.name = "persisted"});
    Array x = arange(0, size, 1, f32) * 0.01f;
    Run run{fn(x).to_vector<float>(), fn.stats()};
    forget_in_memory();
    return run;
  }

  std::vector<cache::EntryInfo> entries(bool check = true) {
    return cache::persistent_cache()->entries(true, check ? &llvm_backend::llvm_backend() : nullptr);
  }
  std::string only_entry() {
    std::vector<cache::EntryInfo> all = entries();
    EXPECT_EQ(all.size(), 1u);
    return all.empty() ? std::string() : all[0].path;
  }

  std::string directory_;
};

inline std::string child_command(const std::string& directory) {
  return "KILN_CACHE=on KILN_CACHE_DIR='" + directory + "' " KILN_PERSISTENT_CHILD;
}

// The child's printed results, without its counts.
inline std::string results_of(const std::string& output) {
  return output.substr(0, std::min(output.find("jitted "), output.find("process ")));
}

}  // namespace kiln::testing
