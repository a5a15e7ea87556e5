// Signature and graph differences for miss explanations.
#include "cache/explain.h"

#include <map>

#include "core/error_format.h"

namespace kiln::cache {

using detail::SignatureToken;

namespace {

std::string ints_text(const std::vector<int64_t>& ints) {
  std::string text = "[";
  for (size_t k = 0; k < ints.size(); ++k) text += (k ? ", " : "") + std::to_string(ints[k]);
  return text + "]";
}

std::string type_text(const SignatureToken& token) {
  return std::string(dtype_name(token.dtype)) + shape_string(token.shape) + (token.weak ? "~" : "");
}

const char* shape_hint =
    "if this dimension varies between calls, pad to a few sizes (kiln::pad_to_bucket) or mark it dynamic "
    "(JitOptions::dynamic_dims)";

// Every component that changed is one difference, so the closest entry (the
// fewest differences) is the one that matches the call the most: after i32[2]
// and i32[4], an f32[2] call differs from i32[2] in its dtype alone.
void diff_arrays(const SignatureToken& a, const SignatureToken& b, std::vector<Difference>& out) {
  if (a.dtype != b.dtype)
    out.push_back({b.path + " dtype changed: " + type_text(a) + " -> " + type_text(b),
                   "convert with astype before the call so the dtype stays the same"});
  if (a.shape.size() != b.shape.size()) {
    out.push_back({b.path + " rank changed: " + type_text(a) + " -> " + type_text(b), shape_hint});
  } else if (a.shape != b.shape) {
    for (size_t d = 0; d < a.shape.size(); ++d)
      if (a.shape[d] != b.shape[d])
        out.push_back({b.path + " dimension " + std::to_string(d) + " changed: " + std::to_string(a.shape[d]) + " -> " +
                           std::to_string(b.shape[d]) + " (" + type_text(a) + " -> " + type_text(b) + ")",
                       shape_hint});
  } else if (a.weak != b.weak) {
    out.push_back({b.path + " changed from " + std::string(a.weak ? "a C++ number (weakly typed)" : "an array") +
                       " to " + (b.weak ? "a C++ number (weakly typed)" : "an array") + ": " + type_text(a) + " -> " +
                       type_text(b),
                   "pass the same kind of value every call"});
  }
}

}  // namespace

std::vector<Difference> diff_signatures(const detail::SignatureDescription& cached,
                                        const detail::SignatureDescription& current) {
  std::vector<Difference> out;
  std::map<std::string, const SignatureToken*> old_tokens, new_tokens;
  for (const auto& token : cached) old_tokens[token.path] = &token;
  for (const auto& token : current) new_tokens[token.path] = &token;

  for (const auto& token : cached) {
    auto found = new_tokens.find(token.path);
    if (found == new_tokens.end()) {
      // Report only the outermost missing path (its children are missing too).
      bool parent_missing = false;
      for (const auto& [path, other] : old_tokens)
        if (path.size() < token.path.size() && token.path.compare(0, path.size(), path) == 0 && !new_tokens.count(path))
          parent_missing = true;
      if (!parent_missing)
        out.push_back({token.path + " is missing (the cached call had it: " + token.text + ")",
                       "pass the same structure every call (same map keys, vector lengths, optional values)"});
      continue;
    }
    const SignatureToken& now = *found->second;
    if (token.kind != now.kind) {
      out.push_back(
          {token.path + " changed kind: " + token.text + " -> " + now.text, "pass the same kind of value every call"});
    } else if (token.kind == SignatureToken::Kind::array) {
      diff_arrays(token, now, out);
    } else if (token.kind == SignatureToken::Kind::static_value && token.hash != now.hash) {
      out.push_back({token.path + " static value changed: " + token.text + " -> " + now.text,
                     "static values are part of the cache key; pass it as an Array to make it dynamic"});
    } else if (token.kind == SignatureToken::Kind::node && (token.size != now.size || token.hash != now.hash)) {
      out.push_back({token.path + " " + now.text + " size changed: " + std::to_string(token.size) + " -> " +
                         std::to_string(now.size),
                     "pass the same structure every call (same map keys, vector lengths, optional values)"});
    }
  }
  for (const auto& token : current) {
    if (old_tokens.count(token.path)) continue;
    bool parent_new = false;
    for (const auto& [path, other] : new_tokens)
      if (path.size() < token.path.size() && token.path.compare(0, path.size(), path) == 0 && !old_tokens.count(path))
        parent_new = true;
    if (!parent_new)
      out.push_back({token.path + " is new (the cached call did not have it: " + token.text + ")",
                     "pass the same structure every call (same map keys, vector lengths, optional values)"});
  }
  return out;
}

std::vector<size_t> changed_literals(const ir::Graph& cached, const ir::Graph& current) {
  std::vector<size_t> changed;
  std::vector<Scalar> a = cached.literal_values(), b = current.literal_values();
  for (size_t k = 0; k < a.size() && k < b.size(); ++k)
    if (!(a[k] == b[k])) changed.push_back(k);
  return changed;
}

std::vector<Difference> diff_graphs(const ir::Graph& cached, const ir::Graph& current) {
  std::vector<Difference> out;
  if (cached.structurally_equal(current)) {
    // Literals inside loop bodies and branches count too, at their own lines.
    std::vector<const ir::Node*> before = cached.literal_nodes(), now = current.literal_nodes();
    for (size_t k : changed_literals(cached, current))
      out.push_back({"the number used at " + detail::location_string(now[k]->where) +
                         " changed: " + before[k]->attrs.scalar.to_string() + " -> " + now[k]->attrs.scalar.to_string(),
                     "numbers that change between calls are lifted to runtime inputs after their 2nd value; "
                     "to avoid even that compile, pass the number as an argument (an Array parameter)"});
    return out;
  }
  // Captured arrays whose type changed (a capture replaced by a different shape).
  size_t captures = std::min(cached.captures.size(), current.captures.size());
  for (size_t k = 0; k < captures; ++k) {
    const ir::Node& a = cached.nodes[static_cast<size_t>(cached.captures[k])];
    const ir::Node& b = current.nodes[static_cast<size_t>(current.captures[k])];
    if (!(a.type == b.type))
      out.push_back({"the array captured at " + detail::location_string(b.where) +
                         " changed type: " + a.type.to_string() + " -> " + b.type.to_string(),
                     "pass it as an argument so its shape is part of the signature"});
  }
  if (!out.empty()) return out;
  size_t n = std::min(cached.nodes.size(), current.nodes.size());
  for (size_t i = 0; i < n; ++i) {
    const ir::Node& a = cached.nodes[i];
    const ir::Node& b = current.nodes[i];
    if (a.op != b.op || !(a.type == b.type) || a.inputs != b.inputs || !(a.attrs.ints == b.attrs.ints) ||
        a.attrs.shape != b.attrs.shape) {
      // The same operation with other attributes (a loop's length, an axis) says which.
      std::string attributes =
          a.op == b.op && a.attrs.ints != b.attrs.ints
              ? " (its integer attributes " + ints_text(a.attrs.ints) + " -> " + ints_text(b.attrs.ints) + ")"
              : "";
      out.push_back({"the traced code took a different path at " + detail::location_string(b.where) + ": %" +
                         std::to_string(i) + " was " + std::string(ir::primitive_name(a.op)) + " " +
                         a.type.to_string() + ", now " + std::string(ir::primitive_name(b.op)) + " " +
                         b.type.to_string() + attributes,
                     "a value read from outside the arguments (a captured number, flag or array) changed the "
                     "traced code; pass it as an argument"});
      return out;
    }
    // The same control node over bodies that differ: the difference is inside.
    for (size_t k = 0; k < a.bodies.size() && k < b.bodies.size(); ++k)
      if (!a.bodies[k]->structurally_equal(*b.bodies[k])) return diff_graphs(*a.bodies[k], *b.bodies[k]);
  }
  out.push_back({"the traced graph has " + std::to_string(current.nodes.size()) +
                     " nodes (cached: " + std::to_string(cached.nodes.size()) + ")",
                 "a value read from outside the arguments changed the traced code; pass it as an argument"});
  return out;
}

}  // namespace kiln::cache
