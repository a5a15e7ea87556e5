// Emitting events to subscribers and to the KILN_LOG log (stderr).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/telemetry.h"

namespace kiln::telemetry {

enum LogCategory : unsigned {
  log_compiles = 1,    // one line per compile
  log_recompiles = 2,  // the explanation of every miss on a function that has entries
  log_storms = 4,
  log_cache = 8,  // hits, traces, executions
};

/// Categories enabled by KILN_LOG (read once; default: storms).
unsigned log_mask();
/// Overrides KILN_LOG (tests).
void set_log_mask(unsigned mask);
/// True when someone would receive an event (a subscriber, or the log).
bool wanted(EventKind kind);
/// Delivers to subscribers and prints it when its category is enabled.
void emit(const Event& event);
/// Prints one "kiln: ..." line (or block) to stderr when any of `categories` is enabled.
void log(unsigned categories, const std::string& text);
/// Prints one "kiln: warning: ..." line to stderr whatever KILN_LOG says.
void warn(const std::string& text);
/// 16 hex digits.
std::string digest(uint64_t hash);

}  // namespace kiln::telemetry
