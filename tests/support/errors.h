// Error tests: a call that must throw kiln::Error whose message names every
// expected fragment and the test file's own line (the user's line, to kiln).
#pragma once

#include <functional>
#include <source_location>
#include <string>
#include <vector>

namespace kiln::testing {

/// "<this test file's name>:<line>", as kiln's messages name the user's line.
std::string test_line(int line, std::source_location test = std::source_location::current());

/// The message of the kiln::Error `fn` raises (a failure if it raises none),
/// for errors that name no line of the user's (a driver's or a GPU's limits).
std::string error_message(const std::function<void()>& fn);

/// Runs `fn`, expecting a kiln::Error holding every part and "(at <this file>:<line>)".
void expect_error(int line, const std::function<void()>& fn, const std::vector<std::string>& parts,
                  std::source_location test = std::source_location::current());

}  // namespace kiln::testing
