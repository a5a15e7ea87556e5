// Dynamic dimensions of a jitted function's arguments: which (array leaf,
// dimension) pairs are compiled shape-generic, how a call's sizes become
// symbols, and the signature that holds symbols instead of those sizes.
//
// Symbols follow the call (as torch.compile's "duck sizing"): dynamic
// dimensions of equal size share one symbol, so an entry is guarded on their
// equality; sizes 0 and 1 are never symbols (broadcasting treats them
// differently), so a call with them compiles on its own.
#pragma once

#include <compare>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kiln/jit.h"

namespace kiln::cache {

struct DynamicDim {
  int leaf = 0;  // index among the call's array leaves
  int dim = 0;
  auto operator<=>(const DynamicDim&) const = default;
};

struct SymbolAssignment {
  std::vector<int64_t> hints;                   // per symbol: its size at this call
  std::vector<std::vector<int>> symbol_of;      // per leaf, per dimension: the symbol, or -1
  std::vector<DynamicDim> first_dim_of_symbol;  // per symbol: the dimension that named it
  std::vector<DynamicDim> specialized_by_size;  // dynamic dimensions of size 0 or 1 at this call
  bool empty() const { return hints.empty(); }
};

/// Checks `dims` against the call's leaves (a marked dimension out of range is the user's error).
void check_dynamic_dims(const std::vector<std::pair<int, int>>& dims, const detail::CallArguments& arguments,
                        const std::string& function, Location where);

SymbolAssignment assign_symbols(const detail::CallArguments& arguments, const std::set<DynamicDim>& dims);

/// The call's signature with each symbolic size replaced by its symbol.
std::string symbolic_signature(const detail::CallArguments& arguments, const SymbolAssignment& symbols);

/// The leaves' shapes with the symbols at `point`.
std::vector<Shape> shapes_at(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                             const std::vector<int64_t>& point);

/// The leaves' types in symbols: "f32[s0,64], i32[s0]".
std::string symbolic_arguments(const detail::CallArguments& arguments, const SymbolAssignment& symbols);

/// "arg 0 dimension 1" for the description of the call.
std::string dim_name(const detail::SignatureDescription& description, DynamicDim dim);

/// The dimensions whose sizes are all that differ between two calls, or
/// nothing when anything else (a dtype, a rank, a static value) differs.
std::vector<DynamicDim> size_only_changes(const detail::SignatureDescription& cached,
                                          const detail::SignatureDescription& current);

}  // namespace kiln::cache
