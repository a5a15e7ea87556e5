// Flattening a call's arguments into a signature (the cache key's bytes) and,
// on a miss only, into a path-named description for explanations.
#include <cstring>

#include "core/array_impl.h"
#include "core/convert.h"
#include "core/error_format.h"
#include "kiln/jit.h"
#include "ops/common/apply.h"
#include "trace/trace.h"

namespace kiln::detail {

namespace {
template <class T>
void append(std::string& bytes, const T& value) {
  bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
}
}  // namespace

void SignatureBuilder::array(const Array& a) {
  const ArrayImpl& impl = impl_of(a, "jit", where);
  if (impl.trace && !impl.trace->alive) raise_leaked(impl, "jit", where);
  out.signature.push_back('A');
  append(out.signature, impl.type.dtype);
  append(out.signature, impl.type.weak);
  append(out.signature, static_cast<uint8_t>(impl.type.shape.size()));
  out.shape_offsets.push_back(static_cast<uint32_t>(out.signature.size()));
  if (!impl.type.shape.empty())
    out.signature.append(reinterpret_cast<const char*>(impl.type.shape.data()),
                         impl.type.shape.size() * sizeof(int64_t));
  out.arrays.push_back(a);
}

void SignatureBuilder::static_leaf(uint64_t hash, const std::string&) {
  out.signature.push_back('S');
  append(out.signature, hash);
}

void SignatureBuilder::key(uint64_t hash, const std::string&) {
  out.signature.push_back('K');
  append(out.signature, hash);
}

void SignatureBuilder::node(std::string_view kind, size_t size) {
  out.signature.push_back('N');
  out.signature.append(kind);
  append(out.signature, size);
}

std::string SignatureDescriber::current() const {
  std::string text;
  for (size_t i = 0; i < path.size(); ++i) {
    // "arg 1" then ["key"], [2], .field without spaces.
    text += path[i];
  }
  return text;
}

void SignatureDescriber::array(const Array& a) {
  const AbstractValue& type = detail::impl(a)->type;
  SignatureToken token{SignatureToken::Kind::array, current(), "array " + type.to_string()};
  token.shape = type.shape;
  token.dtype = type.dtype;
  token.weak = type.weak;
  tokens.push_back(std::move(token));
}

void SignatureDescriber::static_leaf(uint64_t hash, const std::string& text) {
  SignatureToken token{SignatureToken::Kind::static_value, current(), text};
  token.hash = hash;
  tokens.push_back(std::move(token));
}

void SignatureDescriber::node(std::string_view kind, size_t size) {
  SignatureToken token{SignatureToken::Kind::node, current(), std::string(kind)};
  token.size = size;
  token.hash = std::hash<std::string_view>{}(kind);
  tokens.push_back(std::move(token));
}

Array weak_scalar(Scalar value) {
  DType dtype = value.kind() == Scalar::Kind::floating  ? DType::f32
                : value.kind() == Scalar::Kind::integer ? DType::i32
                : value.kind() == Scalar::Kind::complex ? DType::c64
                                                        : DType::bool_;
  Scalar rounded = scalar_as(value, dtype);
  Array result = allocate(AbstractValue{dtype, dtype != DType::bool_, {}});
  switch (dtype) {
    case DType::c64:
      *detail::impl(result)->mutable_data<std::complex<float>>() =
          detail::convert_element<std::complex<float>>(rounded.as_complex());
      break;
    case DType::f32: *detail::impl(result)->mutable_data<float>() = static_cast<float>(rounded.as_double()); break;
    case DType::i32: *detail::impl(result)->mutable_data<int32_t>() = static_cast<int32_t>(rounded.as_int()); break;
    default: *detail::impl(result)->mutable_data<bool>() = rounded.as_int() != 0; break;
  }
  return result;
}

void mark_donated(const std::vector<Array>& arrays, const std::vector<Array>& outputs, const std::string& function,
                  Location where) {
  auto message =
      std::make_shared<const std::string>("jitted '" + function + "' (jit at " + location_string(where) + ")");
  for (const Array& array : arrays) {
    bool returned = false;
    for (const Array& output : outputs) returned |= detail::impl(output) == detail::impl(array);
    if (!returned && detail::impl(array) && !detail::impl(array)->trace) detail::impl(array)->donated_to = message;
  }
}

void check_donate_argnums(const std::vector<int>& donate_argnums, size_t arity, const std::string& function,
                          Location where) {
  for (size_t i = 0; i < donate_argnums.size(); ++i) {
    int index = donate_argnums[i];
    if (index < 0 || static_cast<size_t>(index) >= arity)
      raise("jit",
            "donate_argnums of '" + function + "' names argument " + std::to_string(index) + ", but the call has " +
                std::to_string(arity) + " argument" + (arity == 1 ? "" : "s"),
            where, "donate_argnums counts the arguments from 0");
    for (size_t j = 0; j < i; ++j)
      if (donate_argnums[j] == index)
        raise("jit", "donate_argnums of '" + function + "' names argument " + std::to_string(index) + " twice", where,
              "list each donated argument once");
  }
}

}  // namespace kiln::detail
