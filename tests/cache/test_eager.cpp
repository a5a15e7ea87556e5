// Eager operations on large arrays run compiled kernels: the cache layer
// installs its compiler before main in every program linked with kiln,
// though the program calls nothing in that part of the library.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <vector>

#include "cache/backend_choice.h"
#include "ops/common/apply.h"

namespace kiln {
namespace {

bool native_backend() { return cache::default_backend().name() == "llvm"; }

TEST(EagerCompiler, InstalledBeforeMain) {
  if (!native_backend()) GTEST_SKIP() << "with KILN_BACKEND=interp eager operations run reference kernels";
  EXPECT_NE(detail::eager_compiler_for(int64_t{1} << 20), nullptr) << "a large eager operation finds no compiler";
  EXPECT_EQ(detail::eager_compiler_for(16), nullptr) << "a small eager operation is worth no compile";
}

// Eager and jitted exp share one kernel (kiln's vector math, not libm), so
// they agree bit for bit: the reference kernel would differ in some elements.
TEST(EagerCompiler, LargeEagerOperationRunsTheCompiledKernel) {
  if (!native_backend()) GTEST_SKIP() << "with KILN_BACKEND=interp eager operations run reference kernels";
  Array x = random::uniform(random::key(0), {int64_t{1} << 16}, f32, 0.01, 4.0);
  auto f = [](const Array& v) { return exp(v); };
  EXPECT_EQ(f(x).to_vector<float>(), jit(f)(x).to_vector<float>());
}

}  // namespace
}  // namespace kiln
