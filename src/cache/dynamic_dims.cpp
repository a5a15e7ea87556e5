// Dynamic dimensions of a call (see the header).
#include "cache/dynamic_dims.h"

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

void check_dynamic_dims(const std::vector<std::pair<int, int>>& dims, const detail::CallArguments& arguments,
                        const std::string& function, Location where) {
  for (auto [leaf, dim] : dims) {
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

SymbolAssignment assign_symbols(const detail::CallArguments& arguments, const std::set<DynamicDim>& dims) {
  SymbolAssignment symbols;
  for (size_t leaf = 0; leaf < arguments.arrays.size(); ++leaf)
    symbols.symbol_of.emplace_back(leaf_shape(arguments, leaf).size(), -1);
  std::map<int64_t, int> symbol_of_size;
  for (DynamicDim dim : dims) {
    if (static_cast<size_t>(dim.leaf) >= arguments.arrays.size()) continue;
    const Shape& shape = leaf_shape(arguments, static_cast<size_t>(dim.leaf));
    if (static_cast<size_t>(dim.dim) >= shape.size()) continue;
    int64_t size = shape[static_cast<size_t>(dim.dim)];
    if (size < 2) {
      symbols.specialized_by_size.push_back(dim);
      continue;
    }
    auto [found, inserted] = symbol_of_size.try_emplace(size, static_cast<int>(symbols.hints.size()));
    if (inserted) {
      symbols.hints.push_back(size);
      symbols.first_dim_of_symbol.push_back(dim);
    }
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

std::string symbolic_arguments(const detail::CallArguments& arguments, const SymbolAssignment& symbols) {
  std::string text;
  for (size_t leaf = 0; leaf < arguments.arrays.size(); ++leaf) {
    const detail::AbstractValue& type = detail::impl(arguments.arrays[leaf])->type;
    text += (leaf ? ", " : "") + std::string(dtype_name(type.dtype)) + "[";
    for (size_t dim = 0; dim < type.shape.size(); ++dim) {
      int symbol = symbols.symbol_of[leaf][dim];
      text += (dim ? "," : "") + (symbol >= 0 ? "s" + std::to_string(symbol) : std::to_string(type.shape[dim]));
    }
    text += "]";
  }
  return text;
}

std::string dim_name(const detail::SignatureDescription& description, DynamicDim dim) {
  int leaf = 0;
  for (const auto& token : description) {
    if (token.kind != detail::SignatureToken::Kind::array) continue;
    if (leaf++ == dim.leaf) return token.path + " dimension " + std::to_string(dim.dim);
  }
  return "array leaf " + std::to_string(dim.leaf) + " dimension " + std::to_string(dim.dim);
}

std::vector<DynamicDim> size_only_changes(const detail::SignatureDescription& cached,
                                          const detail::SignatureDescription& current) {
  using Kind = detail::SignatureToken::Kind;
  if (cached.size() != current.size()) return {};
  std::vector<DynamicDim> changed;
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
