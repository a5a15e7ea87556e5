// Builds user-facing error messages in one format:
//   [operation] what is wrong, with shapes/dtypes (at file.cpp:12)
//     hint: how to fix it
#pragma once

#include <string>
#include <string_view>

#include "kiln/array.h"
#include "kiln/error.h"

namespace kiln::detail {

/// "file.cpp:12" — the file's base name keeps messages and printed IR stable.
std::string location_string(Location where);
/// Inside a scope (core/location_scope.h) the message names the user's line
/// rather than `where`, and the operation the user called rather than
/// `operation`.
std::string format_error(std::string_view operation, std::string_view message, Location where,
                         std::string_view hint = {});

template <class ErrorType = Error>
[[noreturn]] void raise(std::string_view operation, std::string_view message, Location where,
                        std::string_view hint = {}) {
  throw ErrorType(format_error(operation, message, where, hint));
}

/// Reports a broken internal invariant: a kiln bug, never a user error
/// (those throw kiln::Error through raise).
[[noreturn]] void internal_error(const char* message, const char* file, int line);

}  // namespace kiln::detail

/// Checks an internal invariant; failing means a bug in kiln.
#define KILN_CHECK(condition, message) \
  ((condition) ? void(0) : ::kiln::detail::internal_error((message), __FILE__, __LINE__))
