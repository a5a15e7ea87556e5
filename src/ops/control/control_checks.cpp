// The checks behind <kiln/control.h>: what a body returns against what it
// must return, predicates, branch indices, scan lengths and loop bounds —
// each error naming the operation, the path in the tree, both types and the
// user's line.
#include <algorithm>

#include "core/array_impl.h"
#include "core/error_format.h"
#include "core/location_scope.h"
#include "kiln/control.h"

namespace kiln::detail {

namespace {
const AbstractValue& type_of(const Array& leaf) { return detail::impl(leaf)->type; }

std::string described(const TreeShape& shape) {
  std::string text = shape.structure;
  if (!text.empty() && text.back() == ';') text.pop_back();
  return text.empty() ? "nothing" : text;
}
}  // namespace

void check_same_tree(const char* operation, const TreeShape& expected, const std::string& expected_what,
                     const TreeShape& got, const std::string& got_what, Location where) {
  if (expected.structure != got.structure)
    raise(operation,
          got_what + " has another structure than " + expected_what + ": " + described(got) + " vs " +
              described(expected),
          where, "return the same containers, keys and static values, with an array for every array leaf");
  for (size_t k = 0; k < expected.leaves.size(); ++k) {
    const AbstractValue& want = type_of(expected.leaves[k]);
    const AbstractValue& have = type_of(got.leaves[k]);
    if (want == have) continue;
    bool weak_only = want.dtype == have.dtype && want.shape == have.shape;
    raise(operation,
          got_what + " at " + got.paths[k] + " is " + have.to_string() + " but " + expected_what + " there is " +
              want.to_string(),
          where,
          weak_only ? "a C++ number is weakly typed (~): start from an array of the dtype, e.g. kiln::full({}, 0.0f, "
                      "kiln::f32), or convert with astype"
                    : "keep each leaf's dtype and shape across iterations and branches (astype, reshape or "
                      "broadcast_to it)");
  }
}

void check_predicate(const char* operation, const TreeShape& value, const std::string& what, Location where) {
  if (value.leaves.size() != 1 || value.structure != "array;")
    raise(operation, what + " must be one array, got " + described(value), where,
          "return a 0-d bool array, e.g. x < limit");
  const AbstractValue& type = type_of(value.leaves[0]);
  if (!type.shape.empty() || is_floating(type.dtype))
    raise(operation, what + " must be a 0-d bool or integer array, got " + type.to_string(), where,
          type.shape.empty() ? "compare it, e.g. x > 0" : "reduce it first, e.g. kiln::any or kiln::sum");
}

namespace {
void require_selector(const char* operation, const std::string& what, const AbstractValue& type, Location where) {
  if (!type.shape.empty() || is_floating(type.dtype))
    raise(operation, what + " must be a 0-d bool or integer array, got " + type.to_string(), where,
          type.shape.empty() ? "compare it, e.g. x > 0" : "reduce it to one value first");
}
}  // namespace

Array predicate_index(const Array& predicate, Location where) {
  require_selector("cond", "the predicate", impl_of(predicate, "cond", where).type, where);
  OperationScope at("cond", where);
  return astype(predicate != 0, DType::i32);  // any nonzero integer is true
}

Array branch_index(const char* operation, const Array& index, size_t branches, Location where) {
  if (branches == 0) raise(operation, "needs at least one branch", where, "pass the branches to choose from");
  const AbstractValue& type = impl_of(index, operation, where).type;
  require_selector(operation, "the branch index", type, where);
  if (type.dtype == DType::bool_) return astype(index, DType::i32, where);
  // Clamped before narrowing, so a huge i64 index cannot wrap into range.
  OperationScope at(operation, where);
  return astype(minimum(maximum(index, 0), static_cast<int64_t>(branches - 1)), DType::i32);
}

int64_t scan_length(const TreeShape& xs, std::optional<int64_t> length, Location where) {
  if (xs.leaves.empty()) {
    if (!length) raise("scan", "has no array to scan and no length", where, "pass length when xs is kiln::no_xs");
    if (*length < 0) raise("scan", "length " + std::to_string(*length) + " is negative", where);
    return *length;
  }
  std::optional<int64_t> found = length;
  std::string first_path = length ? "the length argument" : xs.paths[0];
  for (size_t k = 0; k < xs.leaves.size(); ++k) {
    const AbstractValue& type = type_of(xs.leaves[k]);
    if (type.shape.empty())
      raise("scan", "the scanned array at " + xs.paths[k] + " is 0-d (" + type.to_string() + ")", where,
            "scan over arrays with a leading axis, or pass the value as part of the carry");
    if (!found) found = type.shape[0];
    if (type.shape[0] != *found)
      raise("scan",
            "the scanned array at " + xs.paths[k] + " has leading extent " + std::to_string(type.shape[0]) + " (" +
                type.to_string() + "), but " + first_path + " says " + std::to_string(*found),
            where, "every scanned array must have the same leading extent");
  }
  return *found;
}

Array row_placeholder(const Array& x) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->type = detail::impl(x)->type;
  impl->type.shape.erase(impl->type.shape.begin());
  return detail::wrap(std::move(impl));
}

std::pair<Array, Array> loop_bounds(const Array& lo, const Array& hi, Location where) {
  for (const Array* bound : {&lo, &hi}) {
    const AbstractValue& type = impl_of(*bound, "fori_loop", where).type;
    if (!type.shape.empty() || type.dtype == DType::bool_ || is_floating(type.dtype))
      raise("fori_loop",
            std::string(bound == &lo ? "lo" : "hi") + " must be a 0-d integer array, got " + type.to_string(), where,
            "pass i32 or i64 scalars, or C++ integers for a trip count known when tracing");
  }
  DType dtype = type_of(lo).dtype == DType::i64 || type_of(hi).dtype == DType::i64 ? DType::i64 : DType::i32;
  return {astype(lo, dtype, where), astype(hi, dtype, where)};
}

}  // namespace kiln::detail
