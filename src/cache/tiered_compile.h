// Tiered execution: a new graph's first calls run op by op
// (backend/interp/op_by_op.h) while its optimized executable compiles on
// kiln's compile thread; the optimized code then replaces the first tier,
// atomically, for every later run. Results are the same bits in both tiers.
// On fewer than four cores the compile starts once the first call has ended
// (or has run 100 ms): it would otherwise take a core that call runs on.
//
// A process exiting with compiles in flight does not wait for them: jobs not
// started are dropped, those running skip their remaining optimizer passes
// and stop at their next phase, and nothing they would have saved reaches the
// persistent cache (entries are written whole or not at all anyway).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/jit.h"
#include "runtime/compile_profile.h"
#include "runtime/executable.h"

namespace kiln::cache {

/// How a background compile ended.
struct TierOutcome {
  bool ready = false;  // the optimized code serves runs from now on; false: the compile failed
  double seconds = 0;  // how long compiling took
  runtime::CompilePhases phases;
  std::string error;  // why it failed
};

class TieredExecutable final : public runtime::Executable {
 public:
  explicit TieredExecutable(std::shared_ptr<const runtime::Executable> first_tier);

  std::vector<Array> run(std::span<const Array> arguments, std::span<const Array> implicit_inputs,
                         std::span<const char> donated) const override;
  std::optional<runtime::OutputPlan> plan_outputs(std::span<const Array> arguments,
                                                  std::span<const Array> implicit_inputs) const override;
  std::string_view backend() const override;
  bool interim() const override { return optimized_.load(std::memory_order_acquire) == nullptr; }

  /// Waits until the first tier's first run has ended, at most `longest`
  /// (or until compiles are abandoned).
  void wait_for_first_run(std::chrono::milliseconds longest) const;
  /// Calls `done` once the compile has ended: at once if it has, else on the
  /// thread that ends it.
  void when_done(std::function<void(const TierOutcome&)> done) const;
  /// The compile ended: with the optimized executable, or (null) failed.
  void finish(std::shared_ptr<const runtime::Executable> optimized, const TierOutcome& outcome) const;

 private:
  std::shared_ptr<const runtime::Executable> first_tier_;
  mutable std::mutex mutex_;
  // Written once under mutex_, before optimized_ points at it: runs read the
  // pointer alone, and this keeps what it points at alive.
  mutable std::shared_ptr<const runtime::Executable> optimized_owner_;
  mutable std::atomic<const runtime::Executable*> optimized_{nullptr};
  mutable std::optional<TierOutcome> outcome_;
  mutable std::vector<std::function<void(const TierOutcome&)>> waiting_;
  mutable bool first_run_ended_ = false;
  mutable std::condition_variable first_run_;
};

/// Compiles, in one module, the kernels that running `graph` op by op would
/// compile one module each: eager code's single-operation kernels of its
/// nodes whose native code rounds unlike their reference kernels, with quick
/// machine code (runtime::CodeQuality). The kernel cache keeps them, so the
/// first tier finds them compiled; optimized compiles do not use them.
void compile_first_tier_kernels(const ir::Graph& graph, const runtime::Backend& backend);

/// The mode a function's compiles take: `requested`, or for Auto what
/// KILN_COMPILE says (background unless "sync"; read once).
CompileMode resolve_compile_mode(CompileMode requested);

/// Runs `job` on kiln's compile thread, after the jobs queued before it.
void compile_in_background(std::function<void()> job);

/// What the process's exit hook does, for front ends whose own exit comes
/// first (Python's atexit): queued compiles are dropped, the one running is
/// abandoned at its next phase (waited for up to a second), and later ones
/// are not started.
void stop_background_compiles();

/// Tests: called with each graph before its background compile starts; it
/// may throw, which fails that compile as an LLVM error would.
void set_background_compile_fault(std::function<void(const ir::Graph&)> fault);
void background_compile_fault(const ir::Graph& graph);

}  // namespace kiln::cache
