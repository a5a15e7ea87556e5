// Where recorded operations and errors say they come from. Kiln's own code
// records nodes and raises errors on behalf of the user's call: a public
// operation built of others (tan, softmax, zeros) and each derivative or
// batching rule run inside a scope, so that every node recorded and every
// error raised there names the user's line, never a line of kiln.
#pragma once

#include <string_view>

#include "kiln/array.h"

namespace kiln::detail {

/// The location of the scope open on this thread, else `where`.
Location scoped_location(Location where);
/// The operation an error names: the public operation whose scope is open
/// (the user called zeros, not the broadcast inside it), else `own`.
std::string_view scoped_operation(std::string_view own);

/// While a derivative or batching rule runs (the transform passes open the
/// scope), the operations it records take the location of the node being
/// transformed — the user's line — instead of the rule's own, so rules read
/// like the math (`seed * (1 - y) * (1 + y)`) without passing a location to
/// every operand. It replaces any scope already open; scopes nest.
class LocationScope {
 public:
  explicit LocationScope(Location where);
  ~LocationScope();
  LocationScope(const LocationScope&) = delete;
  LocationScope& operator=(const LocationScope&) = delete;

  struct Frame {
    Location where;
    const char* operation;  // null for a rule's scope
  };

 protected:
  LocationScope(Location where, const char* operation);

 private:
  Frame frame_;
  const Frame* previous_;
  bool opened_;
};

/// Opened by a public operation built of others, for the user's call: its
/// parts (operators, calls with a default location) record nodes at the
/// user's line, and their errors (an array too large for memory included)
/// name the user's line and this operation, so a composite reads like the
/// formula it computes:
///   OperationScope at("tan", where);
///   return sin(x) / cos(x);
/// Inside a scope already open (a composite's parts, a derivative rule) it
/// changes nothing: the outermost operation is the one the user called. Never
/// open one around user code (a loop body): its nodes keep their own lines.
class OperationScope : public LocationScope {
 public:
  OperationScope(const char* operation, Location where) : LocationScope(where, operation) {}
};

}  // namespace kiln::detail
