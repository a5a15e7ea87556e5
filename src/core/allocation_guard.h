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

/// Runs `compute`; a refused allocation inside it that no operation has named
/// yet is raised again as `operation`'s, computing `type` at `where`.
template <class Compute>
auto guard_allocation(const char* operation, const AbstractValue& type, Location where, Compute&& compute)
    -> decltype(compute()) {
  try {
    return compute();
  } catch (const AllocationError& refused) {
    if (refused.refusal().empty()) throw;  // an inner operation named itself already
    raise<AllocationError>(operation, refused.refusal() + " computing " + type.to_string(), where, allocation_hint);
  }
}

/// The same for a step of compiled code: it names the node that allocates
/// (the innermost step, in a loop's body), and leaves the refusal in the
/// error so that an eager operation running this code names itself instead
/// (`zeros`, where the compiled node is a broadcast).
template <class Compute>
auto guard_step_allocation(const char* operation, const AbstractValue& type, Location where, Compute&& compute)
    -> decltype(compute()) {
  try {
    return compute();
  } catch (const AllocationError& refused) {
    // Only the allocator's own error: an inner step named itself already.
    if (refused.refusal().empty() || !std::string_view(refused.what()).starts_with("[allocate]")) throw;
    throw AllocationError(
        format_error(operation, refused.refusal() + " computing " + type.to_string(), where, allocation_hint),
        refused.refusal());
  }
}

}  // namespace kiln::detail
