// Progress bars and lines (see the header).
#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace kiln::tools {

ProgressReport::ProgressReport(std::string what, size_t large)
    : what_(std::move(what)), large_(large), terminal_(::isatty(::fileno(stderr)) != 0) {}

void ProgressReport::operator()(size_t done, size_t total) {
  if (total < large_ || finished_) return;
  bool end = done >= total;
  if (terminal_) {
    // Redrawn at most 20 times a second: drawing is not free over a slow link.
    auto now = std::chrono::steady_clock::now();
    if (!end && now - last_draw_ < std::chrono::milliseconds(50)) return;
    last_draw_ = now;
    constexpr size_t width = 30;
    size_t filled = done * width / total;
    std::string bar(filled, '#');
    bar.append(width - filled, '.');
    std::fprintf(stderr, "\r  %s [%s] %zu/%zu entries%s", what_.c_str(), bar.c_str(), done, total, end ? "\n" : "");
  } else {
    size_t tenth = done * 10 / total;
    if (tenth == last_tenth_ && !end) return;
    last_tenth_ = tenth;
    if (done > 0) std::fprintf(stderr, "kiln: %s: %zu%% (%zu/%zu entries)\n", what_.c_str(), tenth * 10, done, total);
  }
  std::fflush(stderr);
  finished_ = end;
}

}  // namespace kiln::tools
