// Asynchronous dispatch: a jitted call, or an eager operation worth it,
// returns as soon as its work is queued, with arrays whose storage is
// pending (Buffer's pending state); one dispatch thread runs the queue in
// order, so queued work always finds what it reads computed. Reading a
// pending array's storage waits for it, which is how item(), to_vector(),
// I/O, NumPy conversion and printing wait; an error of queued work is
// rethrown there, as raised (naming the operation and its line).
//
// KILN_DISPATCH=sync runs everything on the calling thread, as kiln did
// before queues, for debugging: results are the same bits either way.
#pragma once

#include <exception>
#include <functional>

namespace kiln::detail {

/// Whether this thread queues work: KILN_DISPATCH is not "sync" (read
/// once), the process is not exiting, and this is not the dispatch thread
/// (whose work runs what it would queue at once, in order).
bool dispatch_async();
/// Whether this is kiln's dispatch thread.
bool on_dispatch_thread();
/// Queues `work` after everything queued before it. `work` handles its own
/// errors: it fails the arrays it was to compute and calls note_queued_error.
void enqueue(std::function<void()> work);
/// Records an error of queued work; the next synchronize_queue rethrows the
/// first one recorded since the last.
void note_queued_error(std::exception_ptr error);
/// Waits until the work queued before the call has run; then rethrows the
/// first error queued work raised since the last call, if any.
void synchronize_queue();
/// A front end whose threads hold a lock while they call kiln (Python's
/// GIL) releases it while a thread blocks for queued work, which may need it
/// (a Python telemetry listener, a NumPy owner to release): `release` runs
/// before blocking and returns what `reacquire` takes after.
struct BlockingWaitHooks {
  void* (*release)() = nullptr;
  void (*reacquire)(void*) = nullptr;
};
void set_blocking_wait_hooks(BlockingWaitHooks hooks);
/// Runs `wait` between the installed hooks.
template <class Wait>
void blocking_wait(Wait&& wait);

/// Waits until the work queued before the call has run, leaving its errors
/// to synchronize_queue and to the arrays it failed: what a thread does
/// before work that must come after everything queued (an MPI call, which
/// every rank must make in the same order). Returns at once on the dispatch thread.
void wait_for_queued_work();

/// Tests and benchmarks: queue (true) or run at once (false) from now on,
/// whatever KILN_DISPATCH says; turning queues off waits for queued work.
void set_dispatch_async(bool async);

void* release_for_blocking_wait();
void reacquire_after_blocking_wait(void* state);

template <class Wait>
void blocking_wait(Wait&& wait) {
  void* state = release_for_blocking_wait();
  try {
    wait();
  } catch (...) {
    reacquire_after_blocking_wait(state);
    throw;
  }
  reacquire_after_blocking_wait(state);
}

}  // namespace kiln::detail
