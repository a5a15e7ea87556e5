// The dispatch thread and its queue.
#include "core/dispatch_queue.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace kiln::detail {

namespace {

thread_local bool is_dispatch_thread = false;

bool async_from_environment() {
  const char* text = std::getenv("KILN_DISPATCH");
  if (!text || !*text || std::strcmp(text, "async") == 0) return true;
  if (std::strcmp(text, "sync") == 0) return false;
  std::fprintf(stderr, "kiln: KILN_DISPATCH=%s is unknown (async or sync); using async\n", text);
  return true;
}

std::atomic<bool>& async_wanted() {
  static std::atomic<bool> wanted{async_from_environment()};
  return wanted;
}

std::atomic<void* (*)()> release_hook{nullptr};
std::atomic<void (*)(void*)> reacquire_hook{nullptr};

// Exit handlers survive fork: one drains whichever queue the process has.
std::atomic<bool> exit_hook_registered{false};

// Set by the exit hook: work no longer queues once the queue drained at exit.
std::atomic<bool> exiting{false};

constexpr size_t most_queued = 256;

// Never destroyed: the dispatch thread may run work while the process exits
// (the exit hook drains the queue first).
class DispatchQueue {
 public:
  static DispatchQueue& instance() {
    static const bool registered = [] {
      // A forked child has no dispatch thread: it starts a queue of its own
      // (the parent's queue, and its lock, may be mid-use). Work the parent
      // queued does not run in the child.
      // Before the fork, the queue runs dry: the dispatch thread then waits
      // on its own condition, holding no lock the child could inherit held
      // (the allocator's, say). Without the front end's hooks: a fork keeps
      // its caller's locks.
      pthread_atfork([] { instance().wait_for_queued(); }, nullptr, [] { current.store(new DispatchQueue); });
      return true;
    }();
    (void)registered;
    DispatchQueue* queue = current.load(std::memory_order_acquire);
    if (!queue) {
      DispatchQueue* made = new DispatchQueue;
      if (current.compare_exchange_strong(queue, made)) return *made;
      delete made;
    }
    return *queue;
  }

  void push(std::function<void()> work) {
    std::unique_lock lock(mutex_);
    if (!started_) {
      started_ = true;
      // Exit handlers run last registered first: registered at the first
      // queued work, draining runs before the destruction of what the
      // program made until then (its arrays, the thread pool it used).
      if (!exit_hook_registered.exchange(true)) std::atexit([] { DispatchQueue::instance().drain_at_exit(); });
      std::thread([this] { work_loop(); }).detach();
    }
    // A loop that never reads its results would otherwise queue without
    // bound, holding every step's arrays: the caller waits for room instead.
    if (queue_.size() >= most_queued)
      blocking_wait([&] { done_.wait(lock, [&] { return queue_.size() < most_queued; }); });
    queue_.push_back(std::move(work));
    ++queued_;
    bool wake = idle_;
    lock.unlock();
    if (wake) work_ready_.notify_one();
  }

  void synchronize() {
    std::unique_lock<std::mutex> lock;
    blocking_wait([&] { lock = wait_for_queued(); });
    if (std::exception_ptr error = std::exchange(first_error_, nullptr)) {
      lock.unlock();
      std::rethrow_exception(error);
    }
  }

  void note_error(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!first_error_) first_error_ = std::move(error);
  }

 private:
  void work_loop() {
    is_dispatch_thread = true;
    pthread_setname_np(pthread_self(), "kiln dispatch");
    std::unique_lock lock(mutex_);
    for (;;) {
      idle_ = true;
      work_ready_.wait(lock, [&] { return !queue_.empty(); });
      idle_ = false;
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      // Released here, not under the lock: the work's arrays may be the last
      // handles of large buffers.
      work = nullptr;
      lock.lock();
      ++finished_;
      done_.notify_all();
    }
  }

  void drain_at_exit() {
    if (on_dispatch_thread()) return;
    exiting.store(true);
    wait_for_queued();
  }

 public:
  // Holding the lock on return.
  std::unique_lock<std::mutex> wait_for_queued() {
    std::unique_lock lock(mutex_);
    uint64_t target = queued_;
    done_.wait(lock, [&] { return finished_ >= target; });
    return lock;
  }

 private:
  std::mutex mutex_;
  std::condition_variable work_ready_, done_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0, finished_ = 0;
  bool started_ = false, idle_ = false;
  std::exception_ptr first_error_;
  static std::atomic<DispatchQueue*> current;
};

std::atomic<DispatchQueue*> DispatchQueue::current{nullptr};

}  // namespace

bool dispatch_async() {
  return !is_dispatch_thread && async_wanted().load(std::memory_order_relaxed) &&
         !exiting.load(std::memory_order_relaxed);
}

bool on_dispatch_thread() { return is_dispatch_thread; }

void enqueue(std::function<void()> work) { DispatchQueue::instance().push(std::move(work)); }

void note_queued_error(std::exception_ptr error) { DispatchQueue::instance().note_error(std::move(error)); }

void synchronize_queue() {
  if (is_dispatch_thread) return;
  DispatchQueue::instance().synchronize();
}

void wait_for_queued_work() {
  if (is_dispatch_thread) return;
  blocking_wait([] { DispatchQueue::instance().wait_for_queued(); });
}

void set_blocking_wait_hooks(BlockingWaitHooks hooks) {
  release_hook.store(hooks.release);
  reacquire_hook.store(hooks.reacquire);
}

void* release_for_blocking_wait() {
  auto release = release_hook.load(std::memory_order_acquire);
  return release ? release() : nullptr;
}

void reacquire_after_blocking_wait(void* state) {
  auto reacquire = reacquire_hook.load(std::memory_order_acquire);
  if (reacquire) reacquire(state);
}

void set_dispatch_async(bool async) {
  async_wanted().store(async);
  // Work run at once from now on must not overtake work queued before.
  if (!async) wait_for_queued_work();
}

}  // namespace kiln::detail
