// The one format of user-facing error messages.
#include "core/error_format.h"

#include <cstring>
#include <stdexcept>

#include "core/location_scope.h"

namespace kiln::detail {

std::string location_string(Location where) {
  const char* file = where.file_name();
  if (!file || !*file) return "<unknown>";
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(where.line());
}

std::string format_error(std::string_view operation, std::string_view message, Location where, std::string_view hint) {
  std::string text = "[";
  text += scoped_operation(operation);
  text += "] ";
  text += message;
  text += " (at " + location_string(scoped_location(where)) + ")";
  if (!hint.empty()) {
    text += "\n  hint: ";
    text += hint;
  }
  return text;
}

void internal_error(const char* message, const char* file, int line) {
  throw std::logic_error(std::string("kiln internal error: ") + message + " (" + file + ":" + std::to_string(line) +
                         "); please report it");
}

}  // namespace kiln::detail
