// Per-compile phase times (see the header).
#include "runtime/compile_profile.h"

#include <cstdio>

namespace kiln::runtime {

namespace {
thread_local CompileProfile* current = nullptr;
thread_local CodeQuality current_quality = CodeQuality::optimized;
std::atomic<bool> abandoned{false};

constexpr const char* phase_names[] = {"simplify", "plan", "IR", "optimize", "codegen", "link"};
static_assert(std::size(phase_names) == static_cast<size_t>(CompilePhase::count));
}  // namespace

const char* compile_phase_name(CompilePhase phase) { return phase_names[static_cast<size_t>(phase)]; }

double CompilePhases::total() const {
  double sum = 0;
  for (double s : seconds) sum += s;
  return sum;
}

std::string CompilePhases::describe() const {
  std::string text;
  char part[64];
  for (size_t p = 0; p < seconds.size(); ++p) {
    std::snprintf(part, sizeof part, "%s%s %.1f ms", p ? ", " : "", phase_names[p], seconds[p] * 1e3);
    text += part;
  }
  std::snprintf(part, sizeof part, "; %d kernel%s in %d module%s", kernels_compiled, kernels_compiled == 1 ? "" : "s",
                modules, modules == 1 ? "" : "s");
  text += part;
  if (kernels_reused > 0) text += ", " + std::to_string(kernels_reused) + " reused";
  return text;
}

void CompileProfile::add(CompilePhase phase, double seconds) {
  nanoseconds_[static_cast<size_t>(phase)].fetch_add(static_cast<int64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void CompileProfile::count_kernels(int compiled, int reused) {
  kernels_compiled_.fetch_add(compiled, std::memory_order_relaxed);
  kernels_reused_.fetch_add(reused, std::memory_order_relaxed);
}

CompilePhases CompileProfile::snapshot() const {
  CompilePhases phases;
  for (size_t p = 0; p < phases.seconds.size(); ++p)
    phases.seconds[p] = static_cast<double>(nanoseconds_[p].load(std::memory_order_relaxed)) * 1e-9;
  phases.modules = modules_.load(std::memory_order_relaxed);
  phases.kernels_compiled = kernels_compiled_.load(std::memory_order_relaxed);
  phases.kernels_reused = kernels_reused_.load(std::memory_order_relaxed);
  return phases;
}

CompileProfile* current_compile_profile() { return current; }

CompileProfileScope::CompileProfileScope(CompileProfile* profile) : previous_(current) {
  current = profile;
  // Background compiles run on kiln's compile thread, which the cache starts.
  if (profile && profile->abandonable()) telemetry::timeline::name_this_thread("kiln compile");
}
CompileProfileScope::~CompileProfileScope() { current = previous_; }

CodeQuality code_quality() { return current_quality; }
CodeQualityScope::CodeQualityScope(CodeQuality quality) : previous_(current_quality) { current_quality = quality; }
CodeQualityScope::~CodeQualityScope() { current_quality = previous_; }

void abandon_compiles() { abandoned.store(true, std::memory_order_release); }
bool compiles_abandoned() { return current && current->abandonable() && abandoned.load(std::memory_order_acquire); }
void check_not_abandoned() {
  if (compiles_abandoned()) throw CompileAbandoned();
}

}  // namespace kiln::runtime
