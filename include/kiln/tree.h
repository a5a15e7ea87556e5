// Trees: structured arguments and results (vectors, maps, tuples, registered
// structs...) whose leaves are Arrays (dynamic) or hashable values (static).
//
// A type T is a tree when TreeTraits<T> is defined. Its two operations:
//   visit(value, visitor)  — walks the leaves in a fixed order, announcing
//                            structure and path segments;
//   map_arrays(value, fn)  — rebuilds the value with every Array leaf replaced
//                            by fn(leaf), in the same order.
#pragma once

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/error.h"

namespace kiln {

namespace tree_detail {
template <class T>
inline constexpr bool is_registered_leaf = false;  // dependent, so only a use fails
}  // namespace tree_detail

/// The fallback for types that are neither an Array, hashable, a supported
/// container nor registered: using one as a tree is a compile-time error that
/// says what a tree may hold (the compiler's "required from" lines name the type).
template <class T, class Enable = void>
struct TreeTraits {
  static constexpr bool not_a_tree = true;
  template <class V>
  static void visit(const T&, V&) {
    reject();
  }
  template <class F>
  static T map_arrays(const T& value, F&) {
    reject();
    return value;
  }
  // A member of a class template is compiled only when used, so merely
  // naming TreeTraits<T> (as the Tree concept does) is fine.
  static void reject() {
    static_assert(tree_detail::is_registered_leaf<T>,
                  "kiln: this type cannot be part of a tree. Tree leaves are kiln::Array, C++ numbers, enums "
                  "and std::string; containers are std::vector, std::array, std::map<std::string, T>, "
                  "std::pair, std::tuple and std::optional; register a struct with "
                  "KILN_TREE(Type, field1, field2, ...) at global scope");
  }
};

/// A visitor receives, in order:
///   array(const Array&)                     dynamic leaf
///   static_leaf(uint64_t hash, string text) static leaf (its value is part of a jit key)
///   key(uint64_t hash, string name)         a map key (part of the structure)
///   node(string_view kind, size_t size)     a container and its size (structure)
///   enter(string segment) / leave()         path of what follows, e.g. `["tokens"]`, `[2]`, `.weight`
template <class T>
concept Tree = !requires {
  TreeTraits<std::remove_cvref_t<T>>::not_a_tree;
};

namespace tree_detail {
uint64_t hash_bytes(const void* data, size_t size, uint64_t seed);

template <class T>
concept Printable = requires(std::ostream& out, const T& value) {
  out << value;
};

template <class T>
std::string describe(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return "enum " + std::to_string(static_cast<long long>(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "\"" + value + "\"";
  } else if constexpr (Printable<T>) {
    std::ostringstream out;
    out.precision(17);
    out << value;
    return out.str();
  } else {
    return "<value>";
  }
}
}  // namespace tree_detail

template <>
struct TreeTraits<Array> {
  template <class V>
  static void visit(const Array& value, V& visitor) {
    visitor.array(value);
  }
  template <class F>
  static Array map_arrays(const Array& value, F& fn) {
    return fn(value);
  }
};

/// Numbers, enums and strings are static leaves: hashed by value.
template <class T>
struct TreeTraits<T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>>> {
  template <class V>
  static void visit(const T& value, V& visitor) {
    T canonical = value;
    if constexpr (std::is_floating_point_v<T>) {
      if (canonical == 0) canonical = 0;  // +0 and -0 are one key
    }
    visitor.static_leaf(tree_detail::hash_bytes(&canonical, sizeof(T), sizeof(T)), tree_detail::describe(value));
  }
  template <class F>
  static T map_arrays(const T& value, F&) {
    return value;
  }
};

template <>
struct TreeTraits<std::string> {
  template <class V>
  static void visit(const std::string& value, V& visitor) {
    visitor.static_leaf(tree_detail::hash_bytes(value.data(), value.size(), 0x5eed), tree_detail::describe(value));
  }
  template <class F>
  static std::string map_arrays(const std::string& value, F&) {
    return value;
  }
};

template <class T>
struct TreeTraits<std::vector<T>> {
  template <class V>
  static void visit(const std::vector<T>& value, V& visitor) {
    visitor.node("vector", value.size());
    for (size_t i = 0; i < value.size(); ++i) {
      visitor.enter("[" + std::to_string(i) + "]");
      TreeTraits<T>::visit(value[i], visitor);
      visitor.leave();
    }
  }
  template <class F>
  static std::vector<T> map_arrays(const std::vector<T>& value, F& fn) {
    std::vector<T> result;
    result.reserve(value.size());
    for (const T& item : value) result.push_back(TreeTraits<T>::map_arrays(item, fn));
    return result;
  }
};

template <class T, size_t N>
struct TreeTraits<std::array<T, N>> {
  template <class V>
  static void visit(const std::array<T, N>& value, V& visitor) {
    visitor.node("array", N);
    for (size_t i = 0; i < N; ++i) {
      visitor.enter("[" + std::to_string(i) + "]");
      TreeTraits<T>::visit(value[i], visitor);
      visitor.leave();
    }
  }
  template <class F>
  static std::array<T, N> map_arrays(const std::array<T, N>& value, F& fn) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::array<T, N>{TreeTraits<T>::map_arrays(value[I], fn)...};
    }
    (std::make_index_sequence<N>());
  }
};

template <class T>
struct TreeTraits<std::map<std::string, T>> {
  template <class V>
  static void visit(const std::map<std::string, T>& value, V& visitor) {
    visitor.node("map", value.size());
    for (const auto& [key, item] : value) {
      visitor.key(tree_detail::hash_bytes(key.data(), key.size(), 0x6b6579), key);
      visitor.enter("[\"" + key + "\"]");
      TreeTraits<T>::visit(item, visitor);
      visitor.leave();
    }
  }
  template <class F>
  static std::map<std::string, T> map_arrays(const std::map<std::string, T>& value, F& fn) {
    std::map<std::string, T> result;
    for (const auto& [key, item] : value) result.emplace(key, TreeTraits<T>::map_arrays(item, fn));
    return result;
  }
};

template <class T>
struct TreeTraits<std::optional<T>> {
  template <class V>
  static void visit(const std::optional<T>& value, V& visitor) {
    visitor.node("optional", value ? 1 : 0);
    if (value) TreeTraits<T>::visit(*value, visitor);
  }
  template <class F>
  static std::optional<T> map_arrays(const std::optional<T>& value, F& fn) {
    if (!value) return std::nullopt;
    return TreeTraits<T>::map_arrays(*value, fn);
  }
};

template <class... Ts>
struct TreeTraits<std::tuple<Ts...>> {
  template <class V>
  static void visit(const std::tuple<Ts...>& value, V& visitor) {
    visitor.node("tuple", sizeof...(Ts));
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((visitor.enter("[" + std::to_string(I) + "]"),
        TreeTraits<std::remove_cvref_t<Ts>>::visit(std::get<I>(value), visitor), visitor.leave()),
       ...);
    }
    (std::index_sequence_for<Ts...>());
  }
  template <class F>
  static std::tuple<Ts...> map_arrays(const std::tuple<Ts...>& value, F& fn) {
    // Braced initialization evaluates left to right, keeping leaf order.
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Ts...>{TreeTraits<std::remove_cvref_t<Ts>>::map_arrays(std::get<I>(value), fn)...};
    }
    (std::index_sequence_for<Ts...>());
  }
};

template <class A, class B>
struct TreeTraits<std::pair<A, B>> {
  template <class V>
  static void visit(const std::pair<A, B>& value, V& visitor) {
    visitor.node("pair", 2);
    visitor.enter(".first");
    TreeTraits<A>::visit(value.first, visitor);
    visitor.leave();
    visitor.enter(".second");
    TreeTraits<B>::visit(value.second, visitor);
    visitor.leave();
  }
  template <class F>
  static std::pair<A, B> map_arrays(const std::pair<A, B>& value, F& fn) {
    A first = TreeTraits<A>::map_arrays(value.first, fn);
    return std::pair<A, B>{std::move(first), TreeTraits<B>::map_arrays(value.second, fn)};
  }
};

// ---- Helpers ------------------------------------------------------------------

namespace tree_detail {
struct LeafCollector {
  std::vector<Array> leaves;
  void array(const Array& a) { leaves.push_back(a); }
  void static_leaf(uint64_t, const std::string&) {}
  void key(uint64_t, const std::string&) {}
  void node(std::string_view, size_t) {}
  void enter(const std::string&) {}
  void leave() {}
};
[[noreturn]] void throw_tree_mismatch(size_t expected, size_t got, size_t which);
}  // namespace tree_detail

// tree_leaves and tree_map are unconstrained so that a non-tree type reaches
// the fallback's readable static_assert instead of a bare constraint failure.

/// The Array leaves of a tree, in visiting order.
template <class T>
std::vector<Array> tree_leaves(const T& tree) {
  tree_detail::LeafCollector collector;
  TreeTraits<std::remove_cvref_t<T>>::visit(tree, collector);
  return std::move(collector.leaves);
}

/// Applies fn to the Array leaves of `tree` (and the matching leaves of
/// `others`, which must have the same structure); other leaves are kept.
template <class T, class F, class... Others>
std::remove_cvref_t<T> tree_map(F&& fn, const T& tree, const Others&... others) {
  std::vector<std::vector<Array>> other_leaves{tree_leaves(others)...};
  size_t index = 0;
  auto apply = [&](const Array& leaf) -> Array {
    size_t i = index++;
    if constexpr (sizeof...(Others) == 0) {
      return fn(leaf);
    } else {
      return [&]<size_t... I>(std::index_sequence<I...>)->Array { return fn(leaf, other_leaves[I][i]...); }
      (std::index_sequence_for<Others...>());
    }
  };
  if constexpr (sizeof...(Others) > 0) {
    size_t count = tree_leaves(tree).size();
    for (size_t k = 0; k < other_leaves.size(); ++k)
      if (other_leaves[k].size() != count) tree_detail::throw_tree_mismatch(count, other_leaves[k].size(), k + 1);
  }
  return TreeTraits<std::remove_cvref_t<T>>::map_arrays(tree, apply);
}

}  // namespace kiln

// ---- KILN_TREE(Type, field...) -------------------------------------------------
// Registers a struct as a tree whose children are the listed fields, in order.
// Use at namespace scope, outside any namespace: KILN_TREE(Params, w1, b1, w2, b2).

#define KILN_TREE_DETAIL_VISIT(field)                                                          \
  visitor.enter("." #field);                                                                   \
  ::kiln::TreeTraits<std::remove_cvref_t<decltype(value.field)>>::visit(value.field, visitor); \
  visitor.leave();
#define KILN_TREE_DETAIL_MAP(field) \
  result.field = ::kiln::TreeTraits<std::remove_cvref_t<decltype(value.field)>>::map_arrays(value.field, fn);

#define KILN_TREE_DETAIL_EXPAND(x) x
#define KILN_TREE_DETAIL_FE_1(M, a) M(a)
#define KILN_TREE_DETAIL_FE_2(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_1(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_3(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_2(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_4(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_3(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_5(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_4(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_6(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_5(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_7(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_6(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_8(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_7(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_9(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_8(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_10(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_9(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_11(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_10(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_12(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_11(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_13(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_12(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_14(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_13(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_15(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_14(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_FE_16(M, a, ...) M(a) KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_FE_15(M, __VA_ARGS__))
#define KILN_TREE_DETAIL_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, NAME, ...) NAME
#define KILN_TREE_DETAIL_FOR_EACH(M, ...)                                                                          \
  KILN_TREE_DETAIL_EXPAND(KILN_TREE_DETAIL_PICK(                                                                   \
      __VA_ARGS__, KILN_TREE_DETAIL_FE_16, KILN_TREE_DETAIL_FE_15, KILN_TREE_DETAIL_FE_14, KILN_TREE_DETAIL_FE_13, \
      KILN_TREE_DETAIL_FE_12, KILN_TREE_DETAIL_FE_11, KILN_TREE_DETAIL_FE_10, KILN_TREE_DETAIL_FE_9,               \
      KILN_TREE_DETAIL_FE_8, KILN_TREE_DETAIL_FE_7, KILN_TREE_DETAIL_FE_6, KILN_TREE_DETAIL_FE_5,                  \
      KILN_TREE_DETAIL_FE_4, KILN_TREE_DETAIL_FE_3, KILN_TREE_DETAIL_FE_2, KILN_TREE_DETAIL_FE_1)(M, __VA_ARGS__))

#define KILN_TREE(Type, ...)                                         \
  template <>                                                        \
  struct kiln::TreeTraits<Type> {                                    \
    template <class V>                                               \
    static void visit(const Type& value, V& visitor) {               \
      visitor.node(#Type, 0);                                        \
      KILN_TREE_DETAIL_FOR_EACH(KILN_TREE_DETAIL_VISIT, __VA_ARGS__) \
    }                                                                \
    template <class F>                                               \
    static Type map_arrays(const Type& value, F& fn) {               \
      Type result = value;                                           \
      KILN_TREE_DETAIL_FOR_EACH(KILN_TREE_DETAIL_MAP, __VA_ARGS__)   \
      return result;                                                 \
    }                                                                \
  }
