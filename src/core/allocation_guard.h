// Names the user's operation and line in a refused allocation. The allocator
// knows neither: an eager operation, and each step of compiled code, wraps
// the work that allocates its result.
#pragma once

#include <string>
#include <string_view>

#include "core/array_impl.h"
#include "core/error_format.h"

namespace kiln::detail {

inline constexpr std::string_view allocation_hint = "free arrays no longer needed, or work on smaller pieces";

/// Who names a refused allocation.
enum class AllocationNaming {
  /// An eager operation: for good, unless an inner operation named itself.
  operation,
  /// A step of compiled code: only the allocator's own error (an inner step,
  /// in a loop's body, named itself already), and the refusal stays in the
  /// error so that an eager operation running this code names itself instead
  /// (`zeros`, where the compiled node is a broadcast).
  compiled_step,
};

/// Runs `compute`; a refused allocation inside it is raised again as
/// `operation`'s, computing `type` at `where`.
template <AllocationNaming naming = AllocationNaming::operation, class Compute>
auto guard_allocation(const char* operation, const AbstractValue& type, Location where, Compute&& compute)
    -> decltype(compute()) {
  try {
    return compute();
  } catch (const AllocationError& refused) {
    bool named = refused.refusal().empty();
    if constexpr (naming == AllocationNaming::compiled_step)
      named = named || !std::string_view(refused.what()).starts_with("[allocate]");
    if (named) throw;
    std::string message =
        format_error(operation, refused.refusal() + " computing " + type.to_string(), where, allocation_hint);
    if constexpr (naming == AllocationNaming::compiled_step) throw AllocationError(message, refused.refusal());
    throw AllocationError(message);
  }
}

}  // namespace kiln::detail
