// The backend fuzzer's random graphs through tiered execution: the first
// tier's op-by-op results, with interpreted code and quick kernels
// (runtime::CodeQuality), equal the optimized executable's bit for bit.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <regex>
#include <string>

#include "backend/llvm/backend.h"
#include "cache/backend_choice.h"
#include "cache/graph_cache.h"
#include "cache/tiered_compile.h"
#include "random_graph.h"
#include "support/compile_gate.h"
#include "support/timeline.h"

namespace kiln::testing {
namespace {

// Runs each random graph's first tier (the background compile held) and its
// optimized executable: their results must be equal bit for bit. Returns
// how many graphs ran a first tier (others compile first).
int expect_tiers_agree(uint64_t first_seed, uint64_t last_seed, const RandomGraphOptions& options) {
  int tiered_graphs = 0;
  for (uint64_t seed = first_seed; seed <= last_seed; ++seed) {
    RandomGraph random = make_random_graph(seed, options);
    if (!random.test) continue;
    auto graph = detail::shared_ir(random.test->graph);
    clear_graph_cache();
    std::vector<Array> first, later;
    std::shared_ptr<const runtime::Executable> executable;
    {
      CompileGate gate;
      cache::GraphLookup lookup = cache::get_or_compile(graph, cache::graph_key(*graph), CompileMode::Background);
      executable = lookup.executable;
      if (lookup.tiered) {
        ++tiered_graphs;
        EXPECT_TRUE(executable->interim());
      }
      first = executable->run(random.test->arguments, random.test->captures);
    }
    EXPECT_FALSE(executable->interim()) << "seed " << seed;
    later = executable->run(random.test->arguments, random.test->captures);
    EXPECT_EQ(first.size(), later.size());
    for (size_t k = 0; k < first.size() && k < later.size(); ++k)
      EXPECT_EQ(bytes_of(first[k]), bytes_of(later[k])) << "seed " << seed << ", output " << k << "\n" << random.recipe;
  }
  return tiered_graphs;
}

// Every random graph of the backend fuzzer: the op-by-op results of the
// first tier equal the optimized executable's bit for bit.
TEST(TieredRandomGraphs, TiersAgreeBitForBitOnRandomGraphs) {
  if (!cache::native_backend_chosen()) GTEST_SKIP() << "tiers exist for the native backend only";
  size_t quick_modules = llvm_backend::quick_modules_compiled();
  int tiered_graphs = expect_tiers_agree(1, 150, {});
  // The others compile first: sin, cos or pow, f16 chains, or sums fused unlike eager code.
  EXPECT_GE(tiered_graphs, 100) << "graphs whose first calls ran op by op";
  // Most sums run interpreted (interpreted_rows.h, interpreted_inner.h); sums
  // over several innermost axes and half-precision sums compile quick.
  EXPECT_GE(llvm_backend::quick_modules_compiled(), quick_modules + 5) << "first tiers compiled their quick kernels";
}

// At 2^15 elements and more a first tier runs elementwise operations
// interpreted and fuses trees of them, broadcasts read in place
// (interp/fused_trees.h): still the optimized executable's bits.
TEST(TieredRandomGraphs, FusedTreesAgreeBitForBitOnLargeRandomGraphs) {
  if (!cache::native_backend_chosen()) GTEST_SKIP() << "tiers exist for the native backend only";
  int tiered_graphs = 0;
  std::string events =
      recorded_timeline([&] { tiered_graphs = expect_tiers_agree(1001, 1060, {.elements = int64_t{1} << 15}); });
  EXPECT_GE(tiered_graphs, 30) << "graphs whose first calls ran op by op";
  // Fused trees ran ("sub·exp", "is_nan·gt·logical_or·select", ...), not only single operations.
  std::regex fused(R"re("graph":"eager \(interpreted\)"\},"cat":"kernel","name":"[a-z_0-9]+(·[a-z_0-9]+)+")re");
  EXPECT_GE(count_matches(events, fused), 5);
}

}  // namespace
}  // namespace kiln::testing
