// Random graphs compiled by the native backend against the interpreter. Each
// graph's tolerances come from the generator's error analysis (see
// random_graph.h); a failure prints the seed, the recipe, the graph and the
// plan. More seeds: the fuzz_backend command.
#include <gtest/gtest.h>

#include "cache/backend_choice.h"
#include "random_graph.h"

namespace kiln::testing {
namespace {

TEST(RandomGraphs, CompiledMatchesInterpreterOn300Graphs) {
  std::vector<uint64_t> failing;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomGraph graph = make_random_graph(seed);
    std::string report = check_random_graph(graph);
    if (!report.empty()) {
      failing.push_back(seed);
      ADD_FAILURE() << report;
    }
  }
  std::string seeds;
  for (uint64_t seed : failing) seeds += " " + std::to_string(seed);
  EXPECT_TRUE(failing.empty()) << failing.size() << " failing seeds:" << seeds
                               << "\n  reproduce one with: fuzz_backend --seed S --graphs 1 --verbose";
}

// The comparison must not be vacuous: a backend whose results are off by one
// unit in the last place in a single element is caught on most graphs (all
// but those whose outputs carry a transcendental's or a sum's tolerance).
TEST(RandomGraphs, TheComparisonCatchesAOneUlpError) {
  NudgingBackend nudging;
  int caught = 0, graphs = 60;
  for (int seed = 1; seed <= graphs; ++seed)
    if (!check_random_graph(make_random_graph(static_cast<uint64_t>(seed)), nudging).empty()) ++caught;
  EXPECT_GE(caught, graphs * 3 / 4) << "only " << caught << " of " << graphs << " nudged graphs were caught";
}

TEST(RandomGraphs, TheSameSeedGivesTheSameGraph) {
  for (uint64_t seed : {7u, 77u, 777u}) {
    RandomGraph first = make_random_graph(seed), second = make_random_graph(seed);
    EXPECT_EQ(first.recipe, second.recipe);
    EXPECT_TRUE(detail::ir_of(first.test->graph).structurally_equal(detail::ir_of(second.test->graph)));
    EXPECT_TRUE(detail::ir_of(first.test->graph).same_literals(detail::ir_of(second.test->graph)));
    ASSERT_EQ(first.test->arguments.size(), second.test->arguments.size());
    for (size_t i = 0; i < first.test->arguments.size(); ++i)
      EXPECT_TRUE(compare_arrays(first.test->arguments[i], second.test->arguments[i], {}).empty());
  }
}

}  // namespace
}  // namespace kiln::testing
