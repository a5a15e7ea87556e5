// `kiln cache verify` and `import` over a large cache report their progress:
// plain lines at each tenth when stderr is a file or pipe, a bar redrawn in
// place on a terminal (through `script`, which gives the tool one), and
// nothing for a small cache.
#include <gtest/gtest.h>

#include <string>

#include "cache/backend_choice.h"
#include "cache/cache_bundle.h"
#include "persistent_fixture.h"

namespace kiln::testing {
namespace {

class CacheToolProgress : public PersistentCacheTest {
 protected:
  // Files named like entries, with no entry inside: verify reads and refuses each.
  void fill(size_t count) {
    for (size_t k = 0; k < count; ++k) {
      char name[40];
      std::snprintf(name, sizeof name, "%032zx.kiln", k + 1);
      write_file(directory_ + "/" + name, "not an entry");
    }
  }
  std::string verify() const { return std::string(KILN_TOOL) + " cache verify --dir '" + directory_ + "'"; }
};

TEST_F(CacheToolProgress, ALargeVerifyPrintsPlainLinesWhenNotOnATerminal) {
  fill(150);
  auto [status, output] = run(verify() + " 2>&1 >/dev/null");
  EXPECT_EQ(status, 1) << output;  // every entry is bad
  EXPECT_NE(output.find("kiln: verify: 10% (15/150 entries)\n"), std::string::npos) << output;
  EXPECT_NE(output.find("kiln: verify: 100% (150/150 entries)\n"), std::string::npos) << output;
  EXPECT_EQ(output.find('\r'), std::string::npos) << "a bar was drawn into a pipe";
}

TEST_F(CacheToolProgress, OnATerminalItIsABarRedrawnInPlace) {
  fill(150);
  auto [status, output] = run("script -qec \"" + verify() + " >/dev/null\" /dev/null");
  EXPECT_NE(output.find("\r  verify ["), std::string::npos) << output;
  EXPECT_NE(output.find("[##############################] 150/150 entries"), std::string::npos) << output;
}

TEST_F(CacheToolProgress, ASmallCacheIsWalkedQuietly) {
  fill(20);
  auto [status, output] = run(verify() + " 2>&1 >/dev/null");
  EXPECT_EQ(output.find("verify:"), std::string::npos) << output;
}

TEST_F(CacheToolProgress, AnImportHearsOfEveryEntry) {
  call(1.0f);
  call(2.0f);
  std::string bundle = directory_ + "/bundle";
  ASSERT_EQ(cache::export_entries(bundle).entries, 2u);
  std::string other = directory_ + "/other";
  fs::create_directories(other);
  use(other);
  std::vector<std::pair<size_t, size_t>> heard;
  cache::BundleReport report =
      cache::import_bundle(*cache::persistent_cache(), bundle, cache::default_backend(), Location(),
                           [&](size_t done, size_t total) { heard.emplace_back(done, total); });
  EXPECT_EQ(report.imported, 2u);
  EXPECT_EQ(heard, (std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 2}, {2, 2}}));
}

}  // namespace
}  // namespace kiln::testing
