// The kiln command: looks after the persistent compilation cache, and shows
// what the cache did in a traced run.
//   kiln cache ls | stats | clear | verify [--remove] | export FILE [--function NAME] | import FILE
//              [--dir DIR] [--json]
//   kiln report DIR [-o FILE]
//   kiln graph DIR [--function NAME] [--key KEY] [--svg]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/llvm/backend.h"
#include "cache/cache_bundle.h"
#include "cache/persistent_cache.h"
#include "progress.h"
#include "trace_report.h"

namespace {

const char* usage =
    "usage: kiln cache <command> [--dir DIR] [--json]\n"
    "       kiln report DIR [-o FILE]    (see kiln report --help)\n"
    "       kiln graph DIR [--svg]       (see kiln graph --help)\n"
    "\n"
    "The persistent compilation cache holds executables compiled by earlier\n"
    "processes, so a restarted program loads them instead of compiling.\n"
    "\n"
    "commands:\n"
    "  ls               every entry: key, size, age, hits, function, compile time\n"
    "  stats            the directory, its entries, bytes and bound\n"
    "  clear            removes every entry\n"
    "  verify           reads and checks every entry (format, checksum, this\n"
    "                   build of kiln, this machine's target and CPU features,\n"
    "                   and with KILN_CACHE_KEY_FILE its signature: unsigned and\n"
    "                   forged entries are bad); exits 1 when one is bad.\n"
    "                   --remove deletes the bad ones.\n"
    "  export FILE      writes the sound entries to one bundle FILE, to import\n"
    "                   on another machine of the same kind; --function NAME\n"
    "                   exports the entries of that jitted function alone\n"
    "  import FILE      adds a bundle's entries, each checked as a load would\n"
    "                   check it; sound entries already here are kept\n"
    "\n"
    "options:\n"
    "  --dir DIR        the cache directory (default: KILN_CACHE_DIR, else\n"
    "                   $XDG_CACHE_HOME/kiln, else ~/.cache/kiln)\n"
    "  --json           machine-readable output\n"
    "\n"
    "environment:\n"
    "  KILN_CACHE_KEY_FILE  a private file of at least 32 secret bytes: entries\n"
    "                   written are signed with it and only signed ones load\n"
    "  --help           this text\n";

std::string age_text(int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 7200) return std::to_string(seconds / 60) + "m";
  if (seconds < 172800) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json entry_json(const kiln::cache::EntryInfo& info) {
  nlohmann::json entry = {{"key", info.key},           {"path", info.path},
                          {"bytes", info.bytes},       {"hits", info.hits},
                          {"function", info.function}, {"compile_ms", info.compile_seconds * 1e3},
                          {"created", info.created},   {"last_used", info.last_used}};
  if (!info.signature.empty()) entry["signature"] = info.signature;
  if (!info.problem.empty()) entry["problem"] = info.problem;
  return entry;
}

int list(kiln::cache::PersistentCache& cache, bool json) {
  std::vector<kiln::cache::EntryInfo> entries = cache.entries(/*read=*/true);
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& info : entries) all.push_back(entry_json(info));
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  std::printf("%-32s %10s %6s %6s %10s  %s\n", "key", "bytes", "age", "hits", "compile", "function");
  int64_t now = now_seconds();
  for (const auto& info : entries)
    std::printf("%-32s %10llu %6s %6lld %8.1fms  %s%s\n", info.key.c_str(), static_cast<unsigned long long>(info.bytes),
                age_text(now - info.created).c_str(), static_cast<long long>(info.hits), info.compile_seconds * 1e3,
                info.function.c_str(), info.problem.empty() ? "" : ("  (bad: " + info.problem + ")").c_str());
  return 0;
}

int stats(kiln::cache::PersistentCache& cache, bool json) {
  std::vector<kiln::cache::EntryInfo> entries = cache.entries(/*read=*/true);
  uint64_t bytes = 0;
  int64_t hits = 0;
  double compile_seconds = 0;
  for (const auto& info : entries) {
    bytes += info.bytes;
    hits += info.hits;
    compile_seconds += info.compile_seconds;
  }
  const auto& options = cache.options();
  if (json) {
    nlohmann::json out = {{"directory", options.directory},
                          {"entries", entries.size()},
                          {"bytes", bytes},
                          {"max_bytes", options.max_bytes},
                          {"hits", hits},
                          {"compile_ms_stored", compile_seconds * 1e3}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("directory   %s\n", options.directory.c_str());
  std::printf("entries     %zu\n", entries.size());
  std::printf("bytes       %llu of %llu (%.1f%%)\n", static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(options.max_bytes),
              options.max_bytes ? 100.0 * static_cast<double>(bytes) / static_cast<double>(options.max_bytes) : 0.0);
  std::printf("hits        %lld\n", static_cast<long long>(hits));
  std::printf("compile     %.1f ms stored (what one warm start of every entry saves)\n", compile_seconds * 1e3);
  return 0;
}

int verify(kiln::cache::PersistentCache& cache, bool json, bool remove) {
  const kiln::runtime::Backend& backend = kiln::llvm_backend::llvm_backend();
  std::vector<kiln::cache::EntryInfo> entries =
      cache.entries(/*read=*/true, &backend, kiln::tools::ProgressReport("verify"));
  size_t bad = 0, unsigned_entries = 0;
  for (const auto& info : entries) unsigned_entries += info.signature == "unsigned";
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& info : entries) {
    if (info.problem.empty()) continue;
    ++bad;
    if (remove) cache.remove(info.key);
    if (json) {
      problems.push_back(entry_json(info));
    } else {
      std::printf("%s: %s%s\n", info.path.c_str(), info.problem.c_str(), remove ? " (removed)" : "");
    }
  }
  if (json) {
    nlohmann::json out = {{"entries", entries.size()},   {"bad", bad},
                          {"removed", remove ? bad : 0}, {"unsigned", unsigned_entries},
                          {"signing", cache.signing()},  {"problems", problems}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%zu entries, %zu bad%s; %zu unsigned (%s)\n", entries.size(), bad, bad && remove ? ", removed" : "",
                unsigned_entries,
                cache.signing() ? "signing with KILN_CACHE_KEY_FILE: unsigned entries never load"
                                : "no KILN_CACHE_KEY_FILE: signatures are not checked");
  }
  return bad && !remove ? 1 : 0;
}

int bundle(kiln::cache::PersistentCache& cache, const std::string& command, const std::string& file,
           const std::string& function, bool json) {
  const kiln::runtime::Backend& backend = kiln::llvm_backend::llvm_backend();
  kiln::cache::BundleReport report;
  try {
    report = command == "export"
                 ? kiln::cache::export_bundle(cache, file, function, backend, {})
                 : kiln::cache::import_bundle(cache, file, backend, {}, kiln::tools::ProgressReport("import"));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kiln: %s\n", error.what());
    return 1;
  }
  if (json) {
    nlohmann::json out = {{"entries", report.entries},
                          {"imported", report.imported},
                          {"kept", report.kept},
                          {"refused", report.refused},
                          {"problems", report.problems}};
    std::printf("%s\n", out.dump(2).c_str());
  } else if (command == "export") {
    std::printf("exported %zu entries to %s", report.entries, file.c_str());
    std::printf(report.refused ? " (%zu unsound entries left out)\n" : "\n", report.refused);
  } else {
    std::printf("%zu entries in %s: %zu imported, %zu already here, %zu refused\n", report.entries, file.c_str(),
                report.imported, report.kept, report.refused);
  }
  for (const std::string& problem : report.problems)
    if (!json) std::printf("  refused %s\n", problem.c_str());
  return command == "import" && report.refused ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) return kiln::tools::report_command(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "graph") == 0) return kiln::tools::graph_command(argc, argv);
  std::vector<std::string> words;
  kiln::cache::PersistentOptions options = kiln::cache::PersistentOptions::from_environment();
  options.enabled = true;  // KILN_CACHE=off stops programs using it, not its tool
  options.create = false;  // a mistyped --dir is an error, not a new directory
  bool json = false, remove = false;
  std::string function;
  for (int k = 1; k < argc; ++k) {
    std::string word = argv[k];
    if (word == "--help" || word == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (word == "--json") {
      json = true;
    } else if (word == "--remove") {
      remove = true;
    } else if (word == "--function" && k + 1 < argc) {
      function = argv[++k];
    } else if (word == "--dir" && k + 1 < argc) {
      options.directory = argv[++k];
    } else if (word.starts_with("--dir=")) {
      options.directory = word.substr(6);
    } else if (word.starts_with("-")) {
      std::fprintf(stderr, "kiln: unknown option '%s'\n\n%s", word.c_str(), usage);
      return 2;
    } else {
      words.push_back(word);
    }
  }
  bool with_file = words.size() == 3 && (words[1] == "export" || words[1] == "import");
  if ((words.size() != 2 && !with_file) || words[0] != "cache") {
    std::fputs(usage, stderr);
    return 2;
  }
  const std::string& command = words[1];
  // An unknown command is refused before the cache is opened: the usage is
  // the answer whatever state the directory is in.
  if (!with_file && command != "ls" && command != "stats" && command != "verify" && command != "clear") {
    std::fprintf(stderr, "kiln: unknown command 'cache %s'\n\n%s", command.c_str(), usage);
    return 2;
  }
  kiln::cache::PersistentCache cache(options);
  if (!cache.usable()) return 1;  // the warning said why
  if (command == "ls") return list(cache, json);
  if (command == "stats") return stats(cache, json);
  if (command == "verify") return verify(cache, json, remove);
  if (with_file) return bundle(cache, command, words[2], function, json);
  size_t removed = cache.clear();
  if (json) {
    std::printf("%s\n", nlohmann::json{{"removed", removed}}.dump(2).c_str());
  } else {
    std::printf("removed %zu entries from %s\n", removed, options.directory.c_str());
  }
  return 0;
}
