// Reading a structured trace directory (KILN_TRACE=DIR): every process's
// records, and Graphviz for the pictures.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln::tools {

struct TracedProcess {
  std::string file;
  int64_t pid = 0;
  int rank = -1;  // -1: not an MPI rank
  std::string program;
  double started = 0;  // Unix seconds at the trace's t = 0
  std::vector<nlohmann::json> records;
  size_t unreadable_lines = 0;  // a process killed mid-write leaves a partial last line
  /// "rank 1", or "pid 4242" outside MPI.
  std::string label() const;
};

/// Every kiln-trace-*.jsonl in `directory`, ranks first in rank order, then by start.
/// Throws std::runtime_error when there is none.
std::vector<TracedProcess> read_traces(const std::string& directory);

/// `dot` rendered by Graphviz to SVG; nullopt (and `error` set) when `dot` is missing or fails.
std::optional<std::string> render_svg(const std::string& dot, std::string& error);

}  // namespace kiln::tools
