// The ranks' comparison of a graph before it first runs (see the header):
// one fixed-size exchange of its digest; only when digests differ, the
// graphs' texts, to say where.
#include "cache/rank_agreement.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "comm/communicator.h"
#include "core/error_format.h"
#include "ops/common/graph_text.h"
#include "ops/common/rules.h"

namespace kiln::cache {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

bool has_collectives(const ir::Graph& graph) {
  for (const ir::Node& node : graph.nodes) {
    if (ops::rules(node.op).fusion == ops::Fusion::collective) return true;
    for (const auto& body : node.bodies)
      if (has_collectives(*body)) return true;
  }
  return false;
}

void check_ranks_agree(const std::string& function, const ir::Graph& graph, Location where) {
  const comm::World& world = comm::world();
  if (world.size == 1 || !has_collectives(graph)) return;
  comm::Intent mine;
  std::strncpy(mine.operation, "jit graph", sizeof mine.operation - 1);
  std::strncpy(mine.where, function.c_str(), sizeof mine.where - 1);
  mine.ndim = 2;
  mine.dims[0] = static_cast<int64_t>(graph.structure_hash());
  mine.dims[1] = static_cast<int64_t>(graph.literal_hash());
  std::vector<comm::Intent> all = comm::exchange(mine);
  if (std::all_of(all.begin(), all.end(), [&](const comm::Intent& intent) { return intent.same_as(all[0]); })) return;
  // Every rank saw the same digests, so every rank is here: compare the texts.
  std::vector<std::string> texts = comm::all_gather_text(ops::graph_text(graph));
  std::vector<std::string> ranks_differing;
  for (size_t r = 1; r < all.size(); ++r)
    if (!all[r].same_as(all[0])) ranks_differing.push_back(std::to_string(r));
  size_t other = 1;
  while (other < all.size() && all[other].same_as(all[0])) ++other;
  std::vector<std::string> first = lines_of(texts[0]), second = lines_of(texts[other]);
  size_t line = 0;
  while (line < first.size() && line < second.size() && first[line] == second[line]) ++line;
  auto at = [&](const std::vector<std::string>& lines) {
    return line < lines.size() ? lines[line] : std::string("(the graph ends)");
  };
  std::string joined;
  for (const std::string& rank : ranks_differing) joined += (joined.empty() ? "" : ", ") + rank;
  detail::raise("jit",
                "'" + function +
                    "' would run different graphs on different ranks, whose collectives would not meet: "
                    "rank" +
                    (ranks_differing.size() > 1 ? "s " : " ") + joined +
                    " differ from rank 0. First difference, "
                    "line " +
                    std::to_string(line + 1) + " of the graph:\n  rank 0: " + at(first) + "\n  rank " +
                    std::to_string(other) + ": " + at(second),
                where,
                "a jitted graph must be the same on every rank: pass rank-dependent values as arrays, or read "
                "distributed::rank() inside the function (it is read when the graph runs)");
}

}  // namespace kiln::cache
