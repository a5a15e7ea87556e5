// The scope of the current thread's recorded operations (see the header).
#include "core/location_scope.h"

namespace kiln::detail {

namespace {
thread_local const LocationScope::Frame* open_scope = nullptr;
}  // namespace

Location scoped_location(Location where) { return open_scope ? open_scope->where : where; }

std::string_view scoped_operation(std::string_view own) {
  return open_scope && open_scope->operation ? open_scope->operation : own;
}

LocationScope::LocationScope(Location where) : frame_{where, nullptr}, previous_(open_scope), opened_(true) {
  open_scope = &frame_;
}

// An operation's scope opens only where none is: a rule's scope or an outer
// operation's already names the user's call.
LocationScope::LocationScope(Location where, const char* operation)
    : frame_{where, operation}, previous_(open_scope), opened_(open_scope == nullptr) {
  if (opened_) open_scope = &frame_;
}

LocationScope::~LocationScope() {
  if (opened_) open_scope = previous_;
}

}  // namespace kiln::detail
