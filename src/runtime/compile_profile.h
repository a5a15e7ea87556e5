// Where a graph's compile spends its time, phase by phase, so that
// KILN_LOG=compiles and the benchmarks can say what a cold compile costs.
// A compile sets itself as its thread's current profile; the backend adds
// each phase's time to it, from the threads that compile its kernels too.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "telemetry/timeline.h"

namespace kiln::runtime {

enum class CompilePhase : uint8_t {
  simplify,  // graph rewrites before planning
  plan,      // fusion into kernels, row groups, constants
  generate,  // LLVM IR of the kernels and loops
  optimize,  // LLVM's passes
  codegen,   // machine code
  link,      // the JIT's linking and symbol lookup
  count
};

/// "simplify", "plan", "IR", "optimize", "codegen", "link".
const char* compile_phase_name(CompilePhase phase);

/// The phases' times of one compile, as numbers (copyable).
struct CompilePhases {
  std::array<double, static_cast<size_t>(CompilePhase::count)> seconds{};
  int modules = 0;  // LLVM modules optimized and code-generated
  int kernels_compiled = 0;
  int kernels_reused = 0;  // found compiled already (by their content) in the kernel cache
  double total() const;
  /// "simplify 0.4 ms, plan 0.2 ms, ..., 12 kernels in 3 modules, 4 reused".
  std::string describe() const;
};

/// Thread-safe accumulation of one compile's phases.
class CompileProfile {
 public:
  /// `abandonable`: a background compile, which a process exiting abandons.
  explicit CompileProfile(bool abandonable = false) : abandonable_(abandonable) {}
  bool abandonable() const { return abandonable_; }
  void add(CompilePhase phase, double seconds);
  void count_module() { modules_.fetch_add(1, std::memory_order_relaxed); }
  void count_kernels(int compiled, int reused);
  CompilePhases snapshot() const;

 private:
  std::array<std::atomic<int64_t>, static_cast<size_t>(CompilePhase::count)> nanoseconds_{};
  std::atomic<int> modules_{0}, kernels_compiled_{0}, kernels_reused_{0};
  const bool abandonable_;
};

/// The profile compiles on this thread add to (null: none).
CompileProfile* current_compile_profile();

/// Makes `profile` this thread's current one for the scope's lifetime.
class CompileProfileScope {
 public:
  explicit CompileProfileScope(CompileProfile* profile);
  ~CompileProfileScope();
  CompileProfileScope(const CompileProfileScope&) = delete;
  CompileProfileScope& operator=(const CompileProfileScope&) = delete;

 private:
  CompileProfile* previous_;
};

/// How much LLVM's code generator optimizes the machine code of a compile.
/// quick: not at all (CodeGenOpt::None), for the kernels a graph's first tier
/// runs while its optimized code compiles: half the code generation time.
/// The IR passes are the same, so quick kernels vectorize, contract and sum
/// in the same order and give the same bits as optimized ones (a sum adding
/// whole rows skips the vectorizer: its order does not depend on the width);
/// they run up to 2x slower where compute bound. Quick code is never reused by an optimized
/// compile, never kept by the graph cache and never saved to disk.
enum class CodeQuality : uint8_t { optimized, quick };

/// The quality compiles on this thread produce: optimized unless a
/// CodeQualityScope says otherwise.
CodeQuality code_quality();

/// Makes `quality` this thread's for the scope's lifetime.
class CodeQualityScope {
 public:
  explicit CodeQualityScope(CodeQuality quality);
  ~CodeQualityScope();
  CodeQualityScope(const CodeQualityScope&) = delete;
  CodeQualityScope& operator=(const CodeQualityScope&) = delete;

 private:
  CodeQuality previous_;
};

/// Adds the time from its construction to its destruction to `phase` of the
/// current profile, and shows the phase in the timeline on its thread.
class PhaseTimer {
 public:
  explicit PhaseTimer(CompilePhase phase)
      : phase_(phase), profile_(current_compile_profile()), start_(std::chrono::steady_clock::now()) {
    if (telemetry::timeline::recording()) span_.begin("compile", compile_phase_name(phase));
  }
  ~PhaseTimer() {
    if (profile_)
      profile_->add(phase_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  CompilePhase phase_;
  CompileProfile* profile_;
  std::chrono::steady_clock::time_point start_;
  telemetry::timeline::Span span_;
};

/// A process that exits abandons the background compiles in flight: from
/// then on their optimizer skips its remaining passes and each stops at its
/// next phase. Compiles on a caller's thread are never abandoned.
void abandon_compiles();
/// Whether the compile on this thread is abandoned.
bool compiles_abandoned();

/// Thrown by a compile that stopped because the process is exiting.
class CompileAbandoned : public std::runtime_error {
 public:
  CompileAbandoned() : std::runtime_error("the compile was abandoned: the process is exiting") {}
};
/// Throws CompileAbandoned once compiles are abandoned.
void check_not_abandoned();

}  // namespace kiln::runtime
