// Compiled into every test executable: tests count compiles, so a persistent
// cache left by an earlier run must not turn them into loads. The
// persistent cache's own tests point it at directories of their own. And
// tests check compiled code: a jitted call's first call waits for its
// optimized executable (the tier tests ask for background compiles themselves).
#include <cstdlib>

namespace {
[[maybe_unused]] const bool persistent_cache_off = ::setenv("KILN_CACHE", "off", /*overwrite=*/0) == 0;
[[maybe_unused]] const bool compiles_sync = ::setenv("KILN_COMPILE", "sync", /*overwrite=*/0) == 0;
}  // namespace
