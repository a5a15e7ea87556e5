// The Primitive and Family enums, generated from primitives.def.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln::ir {

enum class Primitive : uint8_t {
#define KILN_PRIMITIVE(name, family) name,
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
};

/// The file of src/ops/ holding a primitive's record.
enum class Family : uint8_t {
#define KILN_FAMILY(name) name,
#include "ir/primitives.def"
};

inline constexpr int primitive_count = 0
#define KILN_PRIMITIVE(name, family) +1
#include "ir/primitives.def"
#undef KILN_PRIMITIVE
    ;

std::string_view primitive_name(Primitive op);
Family primitive_family(Primitive op);

}  // namespace kiln::ir
