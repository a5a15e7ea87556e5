// Reading trace directories and running Graphviz (see the header).
#include "trace_files.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace kiln::tools {

std::string TracedProcess::label() const {
  return rank >= 0 ? "rank " + std::to_string(rank) : "pid " + std::to_string(pid);
}

std::vector<TracedProcess> read_traces(const std::string& directory) {
  std::vector<TracedProcess> processes;
  std::error_code error;
  for (const auto& item : std::filesystem::directory_iterator(directory, error)) {
    std::string name = item.path().filename().string();
    if (!name.starts_with("kiln-trace-") || !name.ends_with(".jsonl")) continue;
    TracedProcess process;
    process.file = item.path().string();
    std::ifstream in(item.path());
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
      if (record.is_discarded() || !record.is_object() || !record.contains("kind")) {
        ++process.unreadable_lines;
        continue;
      }
      if (record["kind"] == "process") {
        process.pid = record.value("pid", int64_t{0});
        process.rank = record.value("rank", -1);
        process.program = record.value("program", "");
        process.started = record.value("started", 0.0);
      }
      process.records.push_back(std::move(record));
    }
    if (!process.records.empty()) processes.push_back(std::move(process));
  }
  if (error) throw std::runtime_error("cannot read '" + directory + "': " + error.message());
  if (processes.empty())
    throw std::runtime_error("no kiln-trace-*.jsonl in '" + directory +
                             "': run the program with KILN_TRACE=" + directory + " first");
  std::sort(processes.begin(), processes.end(), [](const TracedProcess& a, const TracedProcess& b) {
    if ((a.rank >= 0) != (b.rank >= 0)) return a.rank >= 0;
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.started < b.started;
  });
  return processes;
}

std::optional<std::string> render_svg(const std::string& dot, std::string& error) {
  // Graphviz reads the DOT from a file and writes SVG to a pipe: no shell
  // quoting of the graph, and no deadlock on a large one.
  std::string input = (std::filesystem::temp_directory_path() / "kiln-graph-XXXXXX").string();
  int descriptor = ::mkstemp(input.data());
  if (descriptor < 0) {
    error = "cannot make a temporary file for Graphviz";
    return std::nullopt;
  }
  ::close(descriptor);
  std::ofstream(input) << dot;
  std::string command = "dot -Tsvg '" + input + "' 2>/dev/null";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string svg;
  if (pipe) {
    char buffer[65536];
    for (size_t read; (read = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) svg.append(buffer, read);
  }
  int status = pipe ? ::pclose(pipe) : -1;
  std::filesystem::remove(input);
  if (status != 0 || svg.find("<svg") == std::string::npos) {
    error = WIFEXITED(status) && WEXITSTATUS(status) == 127
                ? "Graphviz's dot is not installed (Debian: apt-get install graphviz)"
                : "Graphviz's dot could not draw the graph";
    return std::nullopt;
  }
  return svg.substr(svg.find("<svg"));  // inline: no XML prolog or doctype
}

}  // namespace kiln::tools
