// The execution timeline (KILN_PROFILE's JSON) recorded around a test's code:
// what ran, and by what.
#pragma once

#include <cstddef>
#include <functional>
#include <regex>
#include <string>

namespace kiln::testing {

/// The timeline's events while `run` runs, as the profile file holds them.
std::string recorded_timeline(const std::function<void()>& run);

/// How many times `pattern` occurs in `events`.
std::ptrdiff_t count_matches(const std::string& events, const std::regex& pattern);

}  // namespace kiln::testing
