// The errors users meet. Every message starts with the operation in brackets,
// names the shapes/dtypes involved and the user's source line, and suggests a fix.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

/// Base of every user-facing kiln error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A traced array was asked for its value (`item`, `to_vector`) while tracing.
class ConcretizationError : public Error {
 public:
  using Error::Error;
};

/// A traced placeholder was used after the trace that made it ended.
class LeakedTracerError : public Error {
 public:
  using Error::Error;
};

/// An array was used after it was donated to a jitted call.
class DonatedArrayError : public Error {
 public:
  using Error::Error;
};

/// Memory for an array could not be had: the system refused the request, or
/// its size is beyond what one array may hold (2^46 bytes).
class AllocationError : public Error {
 public:
  using Error::Error;
  /// `refusal`: what the allocator was refused ("the system refused N bytes
  /// for an array f32[...]"), for the operation that asked to name itself.
  AllocationError(const std::string& message, std::string refusal) : Error(message), refusal_(std::move(refusal)) {}
  /// Empty once an operation has named itself in the message.
  const std::string& refusal() const { return refusal_; }

 private:
  std::string refusal_;
};

/// A function recompiled more often than `JitOptions::recompile_limit` with
/// `on_storm = OnStorm::Error`.
class StormError : public Error {
 public:
  using Error::Error;
};

}  // namespace kiln
