// Integer arithmetic that wraps like NumPy's, without undefined behaviour.
#pragma once

#include <type_traits>

namespace kiln::detail {

/// The unsigned type integer arithmetic on T wraps in: at least unsigned int,
/// since narrower types (u16 * u16, say) promote to signed int before they
/// multiply, where overflow is undefined.
template <class T>
using wrapping_type = std::make_unsigned_t<decltype(T() + T())>;

}  // namespace kiln::detail
