// Progress of a long walk over a cache (verify, import): a bar redrawn in
// place on a terminal, a plain line at each tenth otherwise (logs, CI).
// Quiet for small caches, whose walk takes no time worth showing.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace kiln::tools {

class ProgressReport {
 public:
  /// `what`: the walk's name ("verify"); `large`: the fewest entries worth a report.
  explicit ProgressReport(std::string what, size_t large = 100);
  void operator()(size_t done, size_t total);

 private:
  std::string what_;
  size_t large_;
  bool terminal_;
  size_t last_tenth_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace kiln::tools
