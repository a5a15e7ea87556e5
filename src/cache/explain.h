// Why a call missed: the differences between its signature (or traced graph)
// and a cached entry's, in words a user can act on.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/jit.h"

namespace kiln::cache {

struct Difference {
  std::string text;  // "arg 1["tokens"] dimension 0: 32 -> 48 (shape i32[32,128] -> i32[48,128])"
  std::string hint;
};

/// Differences between two call signatures, in tree-path order.
std::vector<Difference> diff_signatures(const detail::SignatureDescription& cached,
                                        const detail::SignatureDescription& current);

/// Differences between two graphs traced from one signature: literals that
/// changed (with their line), captured arrays whose type changed, or the
/// first node where the structure departs.
std::vector<Difference> diff_graphs(const ir::Graph& cached, const ir::Graph& current);

/// Ordinals of literals whose values differ between two structurally equal graphs.
std::vector<size_t> changed_literals(const ir::Graph& cached, const ir::Graph& current);

}  // namespace kiln::cache
