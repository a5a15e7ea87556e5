// Products through OpenBLAS: each thread's packing buffer is advised for huge
// pages before its first product, so that packing does not fault a page per
// 4 KiB in a fresh process.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace kiln {
namespace {

// The VmFlags line of the mapping holding `address` in /proc/self/smaps.
std::string mapping_flags(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  auto where = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) {
      inside = start <= where && where < end;
    } else if (inside && line.starts_with("VmFlags:")) {
      return line;
    }
  }
  return "";
}

bool huge_pages_available() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(enabled, modes);
  return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
}

TEST(BlasBuffers, EachThreadPacksIntoHugePages) {
  using Take = void* (*)(int);
  using GiveBack = void (*)(void*);
  auto take = reinterpret_cast<Take>(::dlsym(RTLD_DEFAULT, "blas_memory_alloc"));
  auto give_back = reinterpret_cast<GiveBack>(::dlsym(RTLD_DEFAULT, "blas_memory_free"));
  if (!take || !give_back) GTEST_SKIP() << "this BLAS does not export its buffer allocator";
  if (!huge_pages_available()) GTEST_SKIP() << "transparent huge pages are off";
  auto product = jit([](const Array& a, const Array& b) { return matmul(a, b); }, {.name = "small_product"});
  std::string flags_after;
  std::vector<float> result;
  // A fresh thread: its OpenBLAS buffer is made by the product it runs.
  std::thread([&] {
    Array a = full({16, 16}, 0.5f), b = full({16, 16}, 2.0f);
    result = product(a, b).to_vector<float>();
    void* buffer = take(0);
    flags_after = mapping_flags(buffer);
    give_back(buffer);
  }).join();
  ASSERT_EQ(result.size(), 256u);
  EXPECT_EQ(result[17], 16.0f);
  // " hg" is MADV_HUGEPAGE in proc(5).
  EXPECT_NE(flags_after.find(" hg"), std::string::npos) << flags_after;
}

}  // namespace
}  // namespace kiln
