// Timelines recorded around a test's code (see the header).
#include "support/timeline.h"

#include <kiln/telemetry.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace kiln::testing {

std::string recorded_timeline(const std::function<void()>& run) {
  std::filesystem::path profile =
      std::filesystem::temp_directory_path() / ("kiln-test-timeline-" + std::to_string(::getpid()) + ".json");
  telemetry::start_profile(profile.string());
  run();
  telemetry::stop_profile();
  std::ifstream file(profile);
  std::string events(std::istreambuf_iterator<char>(file), {});
  std::filesystem::remove(profile);
  return events;
}

std::ptrdiff_t count_matches(const std::string& events, const std::regex& pattern) {
  return std::distance(std::sregex_iterator(events.begin(), events.end(), pattern), std::sregex_iterator());
}

}  // namespace kiln::testing
