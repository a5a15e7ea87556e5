// Dynamic dimensions of a jitted function's arguments: which (array leaf,
// dimension) pairs are compiled shape-generic, how a call's sizes become
// symbols, and the signature that holds symbols instead of those sizes.
//
// Symbols follow the call (as torch.compile's "duck sizing"): dynamic
// dimensions of equal size share one symbol, so an entry is guarded on their
// equality; sizes 0 and 1 are never symbols (broadcasting treats them
// differently), and neither is a size outside a marked dimension's bounds,
// so a call with them compiles on its own. A symbol's bounds are those of
// every marked dimension it stands for: probes stay inside them.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/jit.h"

namespace kiln::cache {

/// An array leaf's dimension: the key of everything dynamic.
struct LeafDim {
  int leaf = 0;  // index among the call's array leaves
  int dim = 0;
  auto operator<=>(const LeafDim&) const = default;
};

/// Sizes, inclusive.
struct SizeRange {
  int64_t min = 2;
  int64_t max = std::numeric_limits<int64_t>::max();
  bool contains(int64_t size) const { return size >= min && size <= max; }
  bool bounded() const { return max != std::numeric_limits<int64_t>::max(); }
  std::string text() const;  // "2..130", "16..128", ">= 2"
  bool operator==(const SizeRange&) const = default;
};

/// The marked dimensions' bounds (JitOptions::dynamic_dims).
using DimBounds = std::map<LeafDim, SizeRange>;
DimBounds bounds_of(const std::vector<DynamicDim>& marked);

/// A dynamic dimension that is no symbol at this call, and why.
struct StaticHere {
  LeafDim dim;
  std::string why;  // "sizes 0 and 1 are specialized ...", "outside its bounds 16..128"
};

struct SymbolAssignment {
  std::vector<int64_t> hints;                // per symbol: its size at this call
  std::vector<SizeRange> bounds;             // per symbol: where probes may go
  std::vector<std::vector<int>> symbol_of;   // per leaf, per dimension: the symbol, or -1
  std::vector<LeafDim> first_dim_of_symbol;  // per symbol: the dimension that named it
  std::vector<StaticHere> static_here;       // dynamic dimensions that are no symbol at this call
  bool empty() const { return hints.empty(); }
};

/// Checks `dims` against the call's leaves (a marked dimension out of range is the user's error).
void check_dynamic_dims(const std::vector<DynamicDim>& dims, const detail::CallArguments& arguments,
                        const std::string& function, Location where);

SymbolAssignment assign_symbols(const detail::CallArguments& arguments, const std::set<LeafDim>& dims,
                                const DimBounds& bounds);

/// The call's signature with each symbolic size replaced by its symbol.
std::string symbolic_signature(const detail::CallArguments& arguments, const SymbolAssignment& symbols);

/// The leaves' shapes with the symbols at `point`.
std::vector<Shape> shapes_at(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                             const std::vector<int64_t>& point);

/// The leaves' types in symbols: "f32[s0,64], i32[s0]". A call with many
/// array leaves (a model's parameters) names the ones holding symbols by
/// their paths and counts the others: "x: f32[s0,64]; and 84 arrays of
/// static shape".
std::string symbolic_arguments(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                               const detail::SignatureDescription& description);

/// "arg 0 dimension 1" for the description of the call.
std::string dim_name(const detail::SignatureDescription& description, LeafDim dim);

/// The dimensions whose sizes are all that differ between two calls, or
/// nothing when anything else (a dtype, a rank, a static value) differs.
std::vector<LeafDim> size_only_changes(const detail::SignatureDescription& cached,
                                       const detail::SignatureDescription& current);

}  // namespace kiln::cache
