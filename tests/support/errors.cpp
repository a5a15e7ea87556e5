// Error-test helper (see the header).
#include "support/errors.h"

#include <gtest/gtest.h>
#include <kiln/error.h>

#include <cstring>

namespace kiln::testing {

void expect_error(int line, const std::function<void()>& fn, const std::vector<std::string>& parts,
                  std::source_location test) {
  const char* slash = std::strrchr(test.file_name(), '/');
  std::string where = std::string(slash ? slash + 1 : test.file_name()) + ":" + std::to_string(line);
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
