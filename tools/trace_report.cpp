// `kiln report`: one self-contained HTML page (no script, no network at view
// time) of a run's cache history, from its structured traces; `kiln graph`:
// one traced graph as DOT or SVG.
#include "trace_report.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace_files.h"

namespace kiln::tools {

namespace {

using Json = nlohmann::json;

std::string escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds < 0.01 ? "%.2f ms" : "%.1f ms", seconds * 1e3);
  return text;
}

constexpr const char* phase_names[] = {"simplify", "plan", "IR", "optimize", "codegen", "link"};
constexpr const char* phase_colors[] = {"#93c5fd", "#a78bfa", "#f9a8d4", "#fca5a5", "#fdba74", "#86efac"};

struct Compile {
  const TracedProcess* process;
  double time;  // seconds since the earliest process began
  Json record;
  bool storm = false;
  bool shared = false;     // the graph was compiled already, by another function
  double ready_time = -1;  // when its optimized code was ready, if reported
};

struct FunctionSummary {
  std::string where;
  int64_t hits = 0, traces = 0, compiles = 0, shared_graphs = 0, persistent_hits = 0, storms = 0, evictions = 0;
  int64_t compiles_finished = 0;
  double compile_seconds = 0;
  std::string last_explanation;
  std::map<std::string, int64_t> compiles_by_process;
  std::map<std::string, std::set<std::string>> keys_by_process;
};

class Report {
 public:
  explicit Report(const std::vector<TracedProcess>& processes) : processes_(processes) {
    origin_ = processes.front().started;
    for (const TracedProcess& process : processes) origin_ = std::min(origin_, process.started);
    for (const TracedProcess& process : processes) read(process);
  }

  std::string page(const std::string& title);
  size_t function_count() const { return functions_.size(); }
  size_t compile_count() const { return compiles_.size(); }
  size_t graph_count() const { return graphs_.size(); }

 private:
  void read(const TracedProcess& process);
  std::string function_table() const;
  std::string timeline() const;
  std::string compile_table() const;
  std::string storm_list() const;
  std::string decisions() const;
  std::string divergence() const;
  std::string phase_breakdown() const;
  std::string graph_sections() const;

  const std::vector<TracedProcess>& processes_;
  double origin_ = 0, end_ = 0;
  std::map<std::string, FunctionSummary> functions_;
  std::vector<Compile> compiles_;
  std::vector<std::pair<const TracedProcess*, Json>> storms_, dynamic_, evictions_, persistent_;
  std::vector<std::pair<const TracedProcess*, Json>> ready_;  // compile_ready with phases
  std::map<std::string, Json> graphs_;                        // by key, first seen
};

void Report::read(const TracedProcess& process) {
  const std::string label = process.label();
  std::map<std::pair<std::string, int64_t>, bool> storm_numbers;
  for (const Json& record : process.records)
    if (record["kind"] == "storm")
      storm_numbers[{record.value("function", ""), record.value("compile_number", int64_t{0})}] = true;
  std::map<std::string, size_t> open_compiles;  // key -> index in compiles_ of its background compile
  for (const Json& record : process.records) {
    const std::string kind = record["kind"];
    const std::string function = record.value("function", "");
    const double time = process.started - origin_ + record.value("t", 0.0);
    end_ = std::max(end_, time);
    FunctionSummary* summary = function.empty() ? nullptr : &functions_[function];
    if (kind == "compile") {
      summary->where = record.value("where", summary->where);
      summary->compiles += 1;
      summary->compiles_by_process[label] += 1;
      summary->keys_by_process[label].insert(record.value("key", ""));
      summary->last_explanation = record.value("reason", "");
      bool storm = storm_numbers.count({function, record.value("compile_number", int64_t{0})}) > 0;
      compiles_.push_back({&process, time, record, storm});
      open_compiles[record.value("key", "")] = compiles_.size() - 1;
    } else if (kind == "shared_graph") {
      summary->shared_graphs += 1;
      summary->last_explanation = record.value("reason", "");
      compiles_.push_back({&process, time, record, false, true});
    } else if (kind == "compile_ready") {
      summary->compile_seconds += record.value("seconds", 0.0);
      summary->compiles_finished += 1;
      if (auto open = open_compiles.find(record.value("key", "")); open != open_compiles.end()) {
        compiles_[open->second].ready_time = time;
        open_compiles.erase(open);
      }
      ready_.emplace_back(&process, record);
    } else if (kind == "persistent_hit") {
      summary->persistent_hits += 1;
      if (summary->last_explanation.empty()) summary->last_explanation = "loaded from the persistent cache";
      persistent_.emplace_back(&process, record);
    } else if (kind == "calls") {
      summary->hits += record.value("hits", int64_t{0});
      summary->traces += record.value("traces", int64_t{0});
      if (summary->where.empty()) summary->where = record.value("where", "");
    } else if (kind == "storm") {
      summary->storms += 1;
      storms_.emplace_back(&process, record);
    } else if (kind == "dynamic") {
      dynamic_.emplace_back(&process, record);
    } else if (kind == "evict") {
      summary->evictions += 1;
      evictions_.emplace_back(&process, record);
    } else if (kind == "graph") {
      graphs_.emplace(record.value("key", ""), record);
    }
  }
}

std::string Report::function_table() const {
  std::ostringstream out;
  out << "<table id=\"functions\"><thead><tr><th>function</th><th>defined at</th><th>calls</th><th>hits</th>"
         "<th>compiles</th><th>persistent hits</th><th>storms</th><th>compile time</th><th>last explanation</th>"
         "</tr></thead><tbody>\n";
  for (const auto& [name, f] : functions_) {
    int64_t calls = f.hits + f.compiles + f.shared_graphs + f.persistent_hits;
    // A background compile still running at exit was abandoned: it has no time.
    std::string compile_time = f.compiles_finished ? milliseconds(f.compile_seconds) : "";
    if (f.compiles_finished < f.compiles)
      compile_time +=
          (compile_time.empty() ? "" : ", ") + std::to_string(f.compiles - f.compiles_finished) + " unfinished at exit";
    out << "<tr class=\"function-row" << (f.storms ? " storm" : "") << "\"><td><code>" << escaped(name)
        << "</code></td><td><code>" << escaped(f.where) << "</code></td><td>" << calls << "</td><td>" << f.hits
        << "</td><td>" << f.compiles << "</td><td>" << f.persistent_hits << "</td><td>" << f.storms << "</td><td>"
        << compile_time << "</td><td class=\"reason\">" << escaped(f.last_explanation) << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

// One lane per function and process; a dot per compile (red in a storm), a
// bar to the moment its background compile was ready, a square per
// persistent hit and a cross per eviction.
std::string Report::timeline() const {
  std::vector<std::pair<std::string, std::string>> lanes;  // (function, process label)
  auto lane_of = [&](const std::string& function, const TracedProcess& process) {
    std::pair<std::string, std::string> lane{function, process.label()};
    auto found = std::find(lanes.begin(), lanes.end(), lane);
    if (found != lanes.end()) return static_cast<size_t>(found - lanes.begin());
    lanes.push_back(lane);
    return lanes.size() - 1;
  };
  std::ostringstream marks;
  const double width = 900, left = 260, lane_height = 22, span = std::max(end_, 1e-3);
  auto x_of = [&](double time) { return left + time / span * width; };
  auto y_of = [&](size_t lane) { return 30 + lane_height * static_cast<double>(lane) + lane_height / 2; };
  for (const Compile& compile : compiles_) {
    size_t lane = lane_of(compile.record.value("function", ""), *compile.process);
    double x = x_of(compile.time), y = y_of(lane);
    if (compile.ready_time >= compile.time)
      marks << "<line x1=\"" << x << "\" y1=\"" << y << "\" x2=\"" << x_of(compile.ready_time) << "\" y2=\"" << y
            << "\" stroke=\"#f59e0b\" stroke-width=\"5\" opacity=\"0.6\"/>\n";
    marks << "<circle class=\"compile-mark\" cx=\"" << x << "\" cy=\"" << y << "\" r=\"5\" fill=\""
          << (compile.shared  ? "white"
              : compile.storm ? "#dc2626"
                              : "#2563eb")
          << "\" stroke=\"#2563eb\"><title>"
          << escaped("compile " + std::to_string(compile.record.value("compile_number", 0)) + " at " +
                     milliseconds(compile.time) + ": " + compile.record.value("reason", ""))
          << "</title></circle>\n";
  }
  for (const auto& [process, record] : persistent_) {
    double time = process->started - origin_ + record.value("t", 0.0);
    double x = x_of(time), y = y_of(lane_of(record.value("function", ""), *process));
    marks << "<rect x=\"" << x - 4 << "\" y=\"" << y - 4 << "\" width=\"8\" height=\"8\" fill=\"#059669\"><title>"
          << escaped("loaded from the persistent cache at " + milliseconds(time)) << "</title></rect>\n";
  }
  for (const auto& [process, record] : evictions_) {
    double time = process->started - origin_ + record.value("t", 0.0);
    double x = x_of(time), y = y_of(lane_of(record.value("function", ""), *process));
    marks << "<path d=\"M" << x - 4 << " " << y - 4 << " l8 8 m0 -8 l-8 8\" stroke=\"#6b7280\" stroke-width=\"2\">"
          << "<title>" << escaped("evicted " + record.value("arguments", "")) << "</title></path>\n";
  }
  std::ostringstream out;
  double height = 50 + lane_height * static_cast<double>(lanes.size());
  out << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 40 << "\" height=\""
      << height << "\" font-family=\"Helvetica, sans-serif\" font-size=\"11\">\n";
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    double y = y_of(lane);
    std::string label = lanes[lane].first + (processes_.size() > 1 ? " (" + lanes[lane].second + ")" : "");
    out << "<line x1=\"" << left << "\" y1=\"" << y << "\" x2=\"" << left + width << "\" y2=\"" << y
        << "\" stroke=\"#e5e7eb\"/><text x=\"" << left - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">"
        << escaped(label.size() > 40 ? label.substr(0, 37) + "..." : label) << "</text>\n";
  }
  for (int tick = 0; tick <= 4; ++tick) {
    double time = span * tick / 4;
    out << "<text x=\"" << x_of(time) << "\" y=\"18\" text-anchor=\"middle\" fill=\"#6b7280\">" << milliseconds(time)
        << "</text>\n";
  }
  out << marks.str() << "</svg>\n";
  return out.str();
}

std::string Report::compile_table() const {
  std::ostringstream out;
  out << "<table id=\"compiles\"><thead><tr><th>at</th>" << (processes_.size() > 1 ? "<th>process</th>" : "")
      << "<th>function</th><th>#</th><th>mode</th><th>why</th><th>lines</th></tr></thead><tbody>\n";
  for (const Compile& compile : compiles_) {
    const Json& record = compile.record;
    out << "<tr class=\"compile-row" << (compile.storm ? " storm" : "") << "\"><td>" << milliseconds(compile.time)
        << "</td>";
    if (processes_.size() > 1) out << "<td>" << escaped(compile.process->label()) << "</td>";
    out << "<td><code>" << escaped(record.value("function", "")) << "</code></td><td>"
        << record.value("compile_number", 0) << "</td><td>"
        << (compile.shared ? "graph compiled by another function" : escaped(record.value("mode", ""))) << "</td><td>"
        << escaped(record.value("reason", ""));
    if (!record.value("hint", "").empty())
      out << "<div class=\"hint\">hint: " << escaped(record.value("hint", "")) << "</div>";
    out << "</td><td>";
    for (const auto& line : record.value("lines", Json::array())) out << "<code>" << escaped(line) << "</code> ";
    out << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

std::string Report::storm_list() const {
  if (storms_.empty()) return "<p>No recompilation storm.</p>\n";
  std::ostringstream out;
  for (const auto& [process, record] : storms_)
    out << "<div class=\"storm-box\"><b>" << escaped(record.value("function", "")) << "</b>"
        << (processes_.size() > 1 ? " (" + escaped(process->label()) + ")" : "") << "<pre>"
        << escaped(record.value("text", "")) << "</pre></div>\n";
  return out.str();
}

std::string Report::decisions() const {
  std::ostringstream out;
  if (dynamic_.empty() && evictions_.empty()) return "<p>No dynamic-dimension decision and no eviction.</p>\n";
  out << "<ul>\n";
  for (const auto& [process, record] : dynamic_)
    out << "<li class=\"dynamic\"><code>" << escaped(record.value("function", ""))
        << "</code>: " << escaped(record.value("decision", "")) << "</li>\n";
  for (const auto& [process, record] : evictions_)
    out << "<li class=\"evict\"><code>" << escaped(record.value("function", "")) << "</code>: evicted the entry for ("
        << escaped(record.value("arguments", "")) << "), over the limit of " << record.value("limit", 0)
        << " entries per function</li>\n";
  out << "</ul>\n";
  return out.str();
}

// Ranks of one job should compile the same graphs: a function whose
// compiles or keys differ between processes is shown first.
std::string Report::divergence() const {
  std::vector<const TracedProcess*> ranks;
  for (const TracedProcess& process : processes_)
    if (process.rank >= 0) ranks.push_back(&process);
  if (ranks.size() < 2) return "";
  std::ostringstream out;
  out << "<h2>Ranks</h2>\n<table id=\"ranks\"><thead><tr><th>function</th>";
  for (const TracedProcess* process : ranks) out << "<th>" << escaped(process->label()) << " compiles</th>";
  out << "<th></th></tr></thead><tbody>\n";
  for (const auto& [name, f] : functions_) {
    std::set<std::set<std::string>> key_sets;
    for (const TracedProcess* rank : ranks) {
      const TracedProcess& process = *rank;
      auto keys = f.keys_by_process.find(process.label());
      key_sets.insert(keys == f.keys_by_process.end() ? std::set<std::string>{} : keys->second);
    }
    bool diverges = key_sets.size() > 1;
    out << "<tr class=\"" << (diverges ? "diverges" : "agrees") << "\"><td><code>" << escaped(name) << "</code></td>";
    for (const TracedProcess* rank : ranks) {
      auto count = f.compiles_by_process.find(rank->label());
      out << "<td>" << (count == f.compiles_by_process.end() ? 0 : count->second) << "</td>";
    }
    out << "<td>" << (diverges ? "ranks compiled different graphs" : "same graphs") << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

std::string Report::phase_breakdown() const {
  if (ready_.empty()) return "<p>No compile finished.</p>\n";
  double longest = 1e-9;
  for (const auto& [process, record] : ready_) longest = std::max(longest, record.value("seconds", 0.0));
  std::ostringstream out;
  out << "<div class=\"legend\">";
  for (size_t p = 0; p < std::size(phase_names); ++p)
    out << "<span><i style=\"background:" << phase_colors[p] << "\"></i>" << phase_names[p] << "</span>";
  out << "</div>\n<table id=\"phases\"><tbody>\n";
  for (const auto& [process, record] : ready_) {
    const Json phases = record.value("phases", Json::object());
    out << "<tr><td><code>" << escaped(record.value("function", "")) << "</code> " << escaped(record.value("key", ""))
        << "</td><td>" << milliseconds(record.value("seconds", 0.0)) << "</td><td class=\"bar\">";
    std::string parts;
    for (size_t p = 0; p < std::size(phase_names); ++p) {
      double seconds = phases.value(phase_names[p], 0.0);
      if (seconds <= 0) continue;
      out << "<span style=\"width:" << seconds / longest * 100 << "%;background:" << phase_colors[p] << "\" title=\""
          << phase_names[p] << " " << milliseconds(seconds) << "\"></span>";
      parts += std::string(parts.empty() ? "" : ", ") + phase_names[p] + " " + milliseconds(seconds);
    }
    out << "</td><td class=\"parts\">" << escaped(parts);
    if (!record.value("error", "").empty()) out << " <b>failed: " << escaped(record.value("error", "")) << "</b>";
    out << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

std::string Report::graph_sections() const {
  std::ostringstream out;
  for (const auto& [key, record] : graphs_) {
    out << "<section class=\"graph\" id=\"graph-" << escaped(key) << "\"><h3><code>"
        << escaped(record.value("function", "")) << "</code> key " << escaped(key) << ": " << record.value("nodes", 0)
        << " nodes, " << record.value("kernels", 0) << " fused kernels</h3>\n";
    std::string error = record.value("dot_error", "");
    if (record.contains("dot")) {
      if (auto svg = render_svg(record.value("dot", ""), error)) out << "<div class=\"picture\">" << *svg << "</div>\n";
    }
    if (!error.empty()) out << "<p class=\"note\">no picture: " << escaped(error) << "</p>\n";
    out << "<details><summary>IR</summary><pre>" << escaped(record.value("ir", "")) << "</pre></details></section>\n";
  }
  return out.str();
}

const char* style = R"(
body { font-family: Helvetica, Arial, sans-serif; margin: 24px; color: #111827; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #e5e7eb; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; }
#compiles td:first-child { white-space: nowrap; }
tr.storm td, tr.diverges td { background: #fee2e2; }
td.reason { max-width: 520px; }
.hint { color: #6b7280; font-size: 12px; margin-top: 2px; }
.storm-box { border-left: 4px solid #dc2626; background: #fef2f2; padding: 4px 12px; margin: 8px 0; }
pre { white-space: pre-wrap; font-size: 12px; }
td.bar { width: 420px; } td.bar span { display: inline-block; height: 12px; }
.legend span { margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.picture svg { max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
.note { color: #6b7280; }
)";

std::string Report::page(const std::string& title) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << escaped(title) << "</title><style>" << style
      << "</style></head><body>\n<h1>" << escaped(title) << "</h1>\n<p>";
  for (const TracedProcess& process : processes_) {
    out << escaped(process.label()) << ": <code>" << escaped(process.program) << "</code>";
    if (process.unreadable_lines) out << " (" << process.unreadable_lines << " unreadable lines)";
    out << "<br>\n";
  }
  out << functions_.size() << " functions, " << compiles_.size() << " compiles, " << storms_.size() << " storms, over "
      << milliseconds(end_) << ".</p>\n";
  out << "<h2>Functions</h2>\n" << function_table();
  out << "<h2>Timeline</h2>\n<p class=\"note\">Dots: compiles (red: in a storm; hollow: a miss whose graph another "
         "function had compiled); orange bars: background compiles until their optimized code was ready; green "
         "squares: persistent cache hits; crosses: evictions.</p>\n"
      << timeline();
  out << divergence();
  out << "<h2>Compiles and why</h2>\n" << compile_table();
  out << "<h2>Storms</h2>\n" << storm_list();
  out << "<h2>Dynamic dimensions and evictions</h2>\n" << decisions();
  out << "<h2>Compile time by phase</h2>\n" << phase_breakdown();
  out << "<h2>Graphs</h2>\n" << graph_sections();
  out << "</body></html>\n";
  return out.str();
}

const char* report_usage =
    "usage: kiln report DIR [-o FILE]\n"
    "  Writes one HTML page (default kiln-report.html) of the structured traces\n"
    "  in DIR (run a program with KILN_TRACE=DIR): per-function calls, hits,\n"
    "  compiles and their explanations with source lines, a timeline, storms,\n"
    "  each graph's IR and picture (Graphviz) and compile times by phase.\n"
    "  Several processes' traces (MPI ranks) merge into one page.\n";

const char* graph_usage =
    "usage: kiln graph DIR [--function NAME] [--key KEY] [--svg]\n"
    "  Prints the last traced graph (of NAME, or with KEY) in DIR as Graphviz\n"
    "  DOT, or drawn to SVG with --svg.\n";

}  // namespace

int report_command(int argc, char** argv) {
  std::string directory, output = "kiln-report.html";
  for (int k = 2; k < argc; ++k) {
    std::string word = argv[k];
    if ((word == "-o" || word == "--output") && k + 1 < argc) {
      output = argv[++k];
    } else if (word == "--help" || word == "-h") {
      std::fputs(report_usage, stdout);
      return 0;
    } else if (directory.empty() && !word.starts_with("-")) {
      directory = word;
    } else {
      std::fprintf(stderr, "kiln report: unexpected '%s'\n\n%s", word.c_str(), report_usage);
      return 2;
    }
  }
  if (directory.empty()) {
    std::fputs(report_usage, stderr);
    return 2;
  }
  try {
    std::vector<TracedProcess> processes = read_traces(directory);
    Report report(processes);
    std::string page = report.page("kiln cache report: " + processes.front().program);
    std::ofstream file(output);
    file << page;
    if (!file.flush()) throw std::runtime_error("cannot write '" + output + "'");
    std::printf("wrote %s: %zu functions, %zu compiles, %zu graphs from %zu process%s\n", output.c_str(),
                report.function_count(), report.compile_count(), report.graph_count(), processes.size(),
                processes.size() == 1 ? "" : "es");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln report: %s\n", error.what());
    return 1;
  }
  return 0;
}

int graph_command(int argc, char** argv) {
  std::string directory, function, key;
  bool svg = false;
  for (int k = 2; k < argc; ++k) {
    std::string word = argv[k];
    if (word == "--function" && k + 1 < argc) function = argv[++k];
    else if (word == "--key" && k + 1 < argc) key = argv[++k];
    else if (word == "--svg") svg = true;
    else if (word == "--help" || word == "-h") {
      std::fputs(graph_usage, stdout);
      return 0;
    } else if (directory.empty() && !word.starts_with("-")) directory = word;
    else {
      std::fprintf(stderr, "kiln graph: unexpected '%s'\n\n%s", word.c_str(), graph_usage);
      return 2;
    }
  }
  if (directory.empty()) {
    std::fputs(graph_usage, stderr);
    return 2;
  }
  try {
    const Json* chosen = nullptr;
    std::vector<TracedProcess> processes = read_traces(directory);
    for (const TracedProcess& process : processes)
      for (const Json& record : process.records)
        if (record["kind"] == "graph" && (function.empty() || record.value("function", "") == function) &&
            (key.empty() || record.value("key", "") == key))
          chosen = &record;
    if (!chosen) throw std::runtime_error("no traced graph matches in '" + directory + "'");
    if (!chosen->contains("dot"))
      throw std::runtime_error("the graph has no picture: " + chosen->value("dot_error", ""));
    std::string dot = chosen->value("dot", ""), error;
    if (!svg) {
      std::fputs(dot.c_str(), stdout);
      return 0;
    }
    auto drawn = render_svg(dot, error);
    if (!drawn) throw std::runtime_error(error);
    std::fputs(drawn->c_str(), stdout);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln graph: %s\n", error.what());
    return 1;
  }
  return 0;
}

}  // namespace kiln::tools
