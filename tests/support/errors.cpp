// Error-test helper (see the header).
#include "support/errors.h"

#include <gtest/gtest.h>
#include <kiln/error.h>

#include <cstring>

namespace kiln::testing {

std::string test_line(int line, std::source_location test) {
  const char* slash = std::strrchr(test.file_name(), '/');
  return std::string(slash ? slash + 1 : test.file_name()) + ":" + std::to_string(line);
}

std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

void expect_error(int line, const std::function<void()>& fn, const std::vector<std::string>& parts,
                  std::source_location test) {
  // The closing parenthesis keeps line 46 from matching a message naming line 460.
  std::string where = "(at " + test_line(line, test) + ")";
  try {
    fn();
    ADD_FAILURE() << "expected an error from " << where;
  } catch (const Error& error) {
    std::string message = error.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
    EXPECT_NE(message.find(where), std::string::npos) << where << " not in: " << message;
  }
}

}  // namespace kiln::testing
