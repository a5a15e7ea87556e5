// Dynamic dimensions of a call (see the header).
#include "cache/dynamic_dims.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/array_impl.h"
#include "core/error_format.h"

namespace kiln::cache {

namespace {
const Shape& leaf_shape(const detail::CallArguments& arguments, size_t leaf) {
  return detail::impl(arguments.arrays[leaf])->type.shape;
}
}  // namespace

std::string SizeRange::text() const {
  return bounded() ? std::to_string(min) + ".." + std::to_string(max) : ">= " + std::to_string(min);
}

DimBounds bounds_of(const std::vector<DynamicDim>& marked) {
  DimBounds bounds;
  for (const DynamicDim& dim : marked) bounds[{dim.leaf, dim.dim}] = {std::max<int64_t>(2, dim.min), dim.max};
  return bounds;
}

void check_dynamic_dims(const std::vector<DynamicDim>& dims, const detail::CallArguments& arguments,
                        const std::string& function, Location where) {
  for (auto [leaf, dim, min, max] : dims) {
    if (min > max)
      detail::raise("jit",
                    "dynamic_dims of '" + function + "' bounds array leaf " + std::to_string(leaf) + " dimension " +
                        std::to_string(dim) + " to sizes " + std::to_string(min) + ".." + std::to_string(max) +
                        ", which holds none",
                    where, "give a minimum no larger than the maximum");
    if (leaf < 0 || static_cast<size_t>(leaf) >= arguments.arrays.size())
      detail::raise("jit",
                    "dynamic_dims of '" + function + "' names array leaf " + std::to_string(leaf) +
                        ", but the call has " + std::to_string(arguments.arrays.size()) + " array leaves",
                    where, "leaves count the arrays of all arguments in order, from 0");
    const Shape& shape = leaf_shape(arguments, static_cast<size_t>(leaf));
    if (dim < 0 || static_cast<size_t>(dim) >= shape.size())
      detail::raise("jit",
                    "dynamic_dims of '" + function + "' names dimension " + std::to_string(dim) + " of array leaf " +
                        std::to_string(leaf) + ", whose shape is " + shape_string(shape),
                    where, "name a dimension in [0, rank)");
  }
}

SymbolAssignment assign_symbols(const detail::CallArguments& arguments, const std::set<LeafDim>& dims,
                                const DimBounds& bounds) {
  SymbolAssignment symbols;
  for (size_t leaf = 0; leaf < arguments.arrays.size(); ++leaf)
    symbols.symbol_of.emplace_back(leaf_shape(arguments, leaf).size(), -1);
  std::map<int64_t, int> symbol_of_size;
  for (LeafDim dim : dims) {
    if (static_cast<size_t>(dim.leaf) >= arguments.arrays.size()) continue;
    const Shape& shape = leaf_shape(arguments, static_cast<size_t>(dim.leaf));
    if (static_cast<size_t>(dim.dim) >= shape.size()) continue;
    int64_t size = shape[static_cast<size_t>(dim.dim)];
    auto bound = bounds.find(dim);
    SizeRange range = bound == bounds.end() ? SizeRange{} : bound->second;
    if (size < 2) {
      symbols.static_here.push_back({dim, "sizes 0 and 1 are specialized (broadcasting treats them differently)"});
      continue;
    }
    if (!range.contains(size)) {
      symbols.static_here.push_back({dim, "outside its bounds " + range.text() + ", it compiles on its own"});
      continue;
    }
    auto [found, inserted] = symbol_of_size.try_emplace(size, static_cast<int>(symbols.hints.size()));
    if (inserted) {
      symbols.hints.push_back(size);
      symbols.bounds.push_back(range);
      symbols.first_dim_of_symbol.push_back(dim);
    }
    // Dimensions sharing a symbol share the tightest of their bounds.
    SizeRange& shared = symbols.bounds[static_cast<size_t>(found->second)];
    shared = {std::max(shared.min, range.min), std::min(shared.max, range.max)};
    symbols.symbol_of[static_cast<size_t>(dim.leaf)][static_cast<size_t>(dim.dim)] = found->second;
  }
  return symbols;
}

std::string symbolic_signature(const detail::CallArguments& arguments, const SymbolAssignment& symbols) {
  std::string signature = arguments.signature;
  for (size_t leaf = 0; leaf < symbols.symbol_of.size(); ++leaf)
    for (size_t dim = 0; dim < symbols.symbol_of[leaf].size(); ++dim) {
      int symbol = symbols.symbol_of[leaf][dim];
      if (symbol < 0) continue;
      // Sizes are never negative: -1 - symbol cannot collide with a size.
      int64_t marker = -1 - symbol;
      std::memcpy(signature.data() + arguments.shape_offsets[leaf] + dim * sizeof(int64_t), &marker, sizeof marker);
    }
  return signature;
}

std::vector<Shape> shapes_at(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                             const std::vector<int64_t>& point) {
  std::vector<Shape> shapes;
  for (size_t leaf = 0; leaf < arguments.arrays.size(); ++leaf) {
    Shape shape = leaf_shape(arguments, leaf);
    for (size_t dim = 0; dim < shape.size(); ++dim)
      if (int symbol = symbols.symbol_of[leaf][dim]; symbol >= 0) shape[dim] = point[static_cast<size_t>(symbol)];
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

namespace {
// Beyond this many array leaves, the ones without symbols are counted, not listed.
constexpr size_t listed_leaves = 8;

std::string leaf_path(const detail::SignatureDescription& description, size_t leaf) {
  size_t index = 0;
  for (const auto& token : description)
    if (token.kind == detail::SignatureToken::Kind::array && index++ == leaf) return token.path;
  return "array leaf " + std::to_string(leaf);
}
}  // namespace

std::string symbolic_arguments(const detail::CallArguments& arguments, const SymbolAssignment& symbols,
                               const detail::SignatureDescription& description) {
  size_t leaves = arguments.arrays.size();
  bool summarize = leaves > listed_leaves;
  std::string text;
  size_t listed = 0, static_leaves = 0;
  for (size_t leaf = 0; leaf < leaves; ++leaf) {
    const detail::AbstractValue& type = detail::impl(arguments.arrays[leaf])->type;
    bool symbolic = std::any_of(symbols.symbol_of[leaf].begin(), symbols.symbol_of[leaf].end(),
                                [](int symbol) { return symbol >= 0; });
    if (summarize && (!symbolic || listed == listed_leaves)) {
      static_leaves += !symbolic;
      continue;
    }
    std::string item = summarize ? leaf_path(description, leaf) + ": " : "";
    item += std::string(dtype_name(type.dtype)) + "[";
    for (size_t dim = 0; dim < type.shape.size(); ++dim) {
      int symbol = symbols.symbol_of[leaf][dim];
      item += (dim ? "," : "") + (symbol >= 0 ? "s" + std::to_string(symbol) : std::to_string(type.shape[dim]));
    }
    text += (listed++ ? ", " : "") + item + "]";
  }
  if (summarize && listed + static_leaves < leaves)
    text += "; and " + std::to_string(leaves - listed - static_leaves) + " more arrays with symbols";
  if (static_leaves > 0) text += "; and " + std::to_string(static_leaves) + " arrays of static shape";
  return text;
}

std::string dim_name(const detail::SignatureDescription& description, LeafDim dim) {
  int leaf = 0;
  for (const auto& token : description) {
    if (token.kind != detail::SignatureToken::Kind::array) continue;
    if (leaf++ == dim.leaf) return token.path + " dimension " + std::to_string(dim.dim);
  }
  return "array leaf " + std::to_string(dim.leaf) + " dimension " + std::to_string(dim.dim);
}

std::vector<LeafDim> size_only_changes(const detail::SignatureDescription& cached,
                                       const detail::SignatureDescription& current) {
  using Kind = detail::SignatureToken::Kind;
  if (cached.size() != current.size()) return {};
  std::vector<LeafDim> changed;
  int leaf = 0;
  for (size_t k = 0; k < cached.size(); ++k) {
    const auto& a = cached[k];
    const auto& b = current[k];
    if (a.kind != b.kind || a.path != b.path) return {};
    if (a.kind != Kind::array) {
      if (a.hash != b.hash || a.size != b.size) return {};
      continue;
    }
    if (a.dtype != b.dtype || a.weak != b.weak || a.shape.size() != b.shape.size()) return {};
    for (size_t dim = 0; dim < a.shape.size(); ++dim)
      if (a.shape[dim] != b.shape[dim]) changed.push_back({leaf, static_cast<int>(dim)});
    ++leaf;
  }
  return changed;
}

}  // namespace kiln::cache
