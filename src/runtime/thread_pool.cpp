// Thread pool (see the header). One split loop at a time: kernels run one
// after another, so a single shared job keeps the pool simple; a loop that
// finds the pool taken (another user thread, or a loop inside a part) runs
// on its caller alone.
//
// Sharing a busy machine: a worker that the scheduler has taken off its
// core must never hold the caller up. So parts are claimed, not assigned:
// the caller runs every part no worker has started and waits only for parts
// in progress. And whether handing parts out pays is measured, per size of
// loop: on an idle machine a large loop runs about twice as fast split, but
// with other processes busy a worker comes late or not at all, and a small
// loop then runs faster on its caller alone.
#include "runtime/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "telemetry/timeline.h"

namespace kiln::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// Below this many element-operations a part is not worth a handoff (waking
// or signalling a thread costs a few microseconds).
constexpr int64_t part_minimum_cost = 1 << 16;

// Kernels come in quick succession (a training step runs dozens), and a
// thread that blocks lets its core go idle; waking it, and the core coming
// back to speed, costs far more than a kernel here. So both sides poll for
// 2 ms before they block, yielding the core between polls so that other
// runnable threads lose nothing. Measured in this virtual machine, for a
// burst of [256,512] elementwise kernels after 200 ms idle: 8 us each back
// to back; 120 us when polling 50 us (with or without yielding after); 16
// us yielding for 2 ms; busy-polling with pause for 2 ms did as well but
// slowed two test processes sharing the cores twofold.
constexpr auto poll_bound = std::chrono::milliseconds(2);

template <class Ready>
bool poll_until(Ready ready) {
  auto start = Clock::now();
  for (;;) {
    if (ready()) return true;
    if (Clock::now() - start > poll_bound) return ready();
    std::this_thread::yield();
  }
}

// Sleeping and waking on a 32-bit atomic. A sleeper is counted before it
// checks the value one last time, and a waker changes the value before it
// reads the count, both sequentially consistent: either the sleeper sees the
// new value or the waker sees the sleeper, so a waker that sees none makes
// no system call.
class Sleepers {
 public:
  void sleep_while(const std::atomic<uint32_t>& word, uint32_t value) {
    count_.fetch_add(1);
    while (word.load() == value)
      syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
    count_.fetch_sub(1);
  }
  void wake_all(std::atomic<uint32_t>& word) {
    if (count_.load() > 0)
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
  }

 private:
  std::atomic<int> count_{0};
};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);

int cores_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// MPI ranks on one node each get their share of its cores: a pool per rank
// sized to the whole node would put several runnable threads on every core.
int ranks_on_this_node() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"})
    if (const char* text = std::getenv(name)) return std::max(1, std::atoi(text));
  return 1;
}

int default_threads() {
  if (const char* text = std::getenv("KILN_THREADS")) return std::max(1, std::atoi(text));
  return std::max(1, cores_available() / ranks_on_this_node());
}

// Whether splitting loops of one size paid when last measured. The measure
// is the split loop's time over the time its caller would have taken alone
// (its own time per part, times all parts). A size that stopped paying is
// tried again after a backoff, so the pool notices when the machine frees up.
struct SplitRecord {
  double time_ratio = 0;  // moving average; 0: never measured, so split
  Clock::time_point next_try{};
  Clock::duration backoff = std::chrono::milliseconds(20);
};
constexpr double splitting_pays_below = 0.9;
constexpr auto longest_backoff = std::chrono::seconds(2);
bool splitting_pays(const SplitRecord& record) { return record.time_ratio < splitting_pays_below; }

class Pool {
 public:
  Pool() : threads_(default_threads()), limit_(threads_) {
    most_parts_ = threads_ == 1 ? 1 : std::min<int64_t>(4 * threads_, max_slots);
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { work(i); });
  }

  int threads() const { return threads_; }
  void set_limit(int threads) { limit_.store(std::clamp(threads, 1, threads_)); }
  int limit() const { return limit_.load(std::memory_order_relaxed); }

  // The bounds of every part depend only on the loop's size, never on who
  // runs it: a kernel's vector body and scalar remainder then cover the same
  // elements on every call, and results stay the same bit for bit.
  int64_t parts_for(int64_t range, int64_t total_cost, int64_t most_parts) const {
    int64_t cap = most_parts > 0 ? std::min(most_parts, most_parts_) : most_parts_;
    return std::clamp<int64_t>(total_cost / part_minimum_cost, 1, std::min(range, cap));
  }

  void run(int64_t range, int64_t parts, uint64_t total_cost, const std::function<void(int64_t, int64_t)>& body) {
    if (busy_.exchange(true, std::memory_order_acquire)) return run_alone(range, parts, body);
    SplitRecord& record = records_[static_cast<size_t>(std::bit_width(total_cost))];
    Clock::time_point start = Clock::now();
    bool trying_again = !splitting_pays(record);
    if (trying_again && start < record.next_try) {
      busy_.store(false, std::memory_order_release);
      return run_alone(range, parts, body);
    }
    // Parts carry their kernel's name in the timeline, on whichever thread runs them.
    if (telemetry::timeline::recording()) label_ = telemetry::timeline::innermost_span_name();
    else if (!label_.empty()) label_.clear();
    publish(range, parts, body);
    int64_t done_by_caller = claim_and_run(0);
    Clock::time_point own_work_done = Clock::now();
    auto total = static_cast<uint32_t>(parts);
    if (finished_.fetch_add(static_cast<uint32_t>(done_by_caller), std::memory_order_acq_rel) +
            static_cast<uint32_t>(done_by_caller) !=
        total) {
      if (!poll_until([&] { return finished_.load(std::memory_order_acquire) == total; }))
        for (uint32_t seen; (seen = finished_.load()) != total;) waiting_caller_.sleep_while(finished_, seen);
    }
    if (failed_.load()) {
      std::exception_ptr failure = std::exchange(failure_, nullptr);
      failed_.store(false);
      busy_.store(false, std::memory_order_release);
      std::rethrow_exception(failure);
    }
    if (done_by_caller > 0)
      learn(record, trying_again, Clock::now() - start, (own_work_done - start) * parts / done_by_caller);
    busy_.store(false, std::memory_order_release);
  }

  static void run_alone(int64_t range, int64_t parts, const std::function<void(int64_t, int64_t)>& body) {
    for (int64_t part = 0; part < parts; ++part) run_part(range, parts, part, body);
  }

 private:
  static constexpr int64_t max_slots = 256;

  static void run_part(int64_t range, int64_t parts, int64_t part, const std::function<void(int64_t, int64_t)>& body) {
    int64_t begin = range * part / parts, end = range * (part + 1) / parts;
    if (begin < end) body(begin, end);
  }

  // A part's slot holds generation*2 while free and generation*2+1 once
  // claimed: a worker still looking at an earlier loop fails its claim.
  void publish(int64_t range, int64_t parts, const std::function<void(int64_t, int64_t)>& body) {
    uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
    body_.store(&body, std::memory_order_relaxed);
    range_.store(range, std::memory_order_relaxed);
    parts_.store(parts, std::memory_order_relaxed);
    active_.store(limit(), std::memory_order_relaxed);
    finished_.store(0, std::memory_order_relaxed);
    for (int64_t part = 0; part < parts; ++part)
      slots_[static_cast<size_t>(part)].store(uint64_t{generation} << 1, std::memory_order_release);
    generation_.store(generation);
    idle_workers_.wake_all(generation_);
  }

  // Claims parts of the current loop, the thread's own share first (the same
  // thread then touches the same memory from one kernel to the next), then
  // any left; returns how many it claimed (after a part threw, claimed
  // parts are skipped).
  int64_t claim_and_run(int index) {
    uint32_t generation = generation_.load(std::memory_order_acquire);
    uint64_t free = uint64_t{generation} << 1;
    int64_t parts = parts_.load(std::memory_order_relaxed), ran = 0;
    auto try_part = [&](int64_t part) {
      auto& slot = slots_[static_cast<size_t>(part)];
      uint64_t expected = free;
      if (slot.load(std::memory_order_relaxed) != free ||
          !slot.compare_exchange_strong(expected, free | 1, std::memory_order_acq_rel))
        return;
      // The claim succeeded, so this loop is still running and its fields are
      // the ones published with this generation.
      int64_t loop_parts = parts_.load(std::memory_order_relaxed);
      // A part that throws ends the loop: the parts not yet started are
      // claimed and skipped, and the caller rethrows once no part runs.
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          int64_t range = range_.load(std::memory_order_relaxed);
          telemetry::timeline::Span span;
          if (telemetry::timeline::recording()) begin_part_span(span, range, loop_parts, part);
          run_part(range, loop_parts, part, *body_.load(std::memory_order_relaxed));
        } catch (...) {
          if (!failed_.exchange(true)) failure_ = std::current_exception();
        }
      }
      ++ran;
      if (index != 0 && finished_.fetch_add(1) + 1 == loop_parts) waiting_caller_.wake_all(finished_);
    };
    for (int64_t part = index; part < parts; part += threads_) try_part(part);
    for (int64_t part = 0; part < parts; ++part)
      if (part % threads_ != index) try_part(part);
    return ran;
  }

  void begin_part_span(telemetry::timeline::Span& span, int64_t range, int64_t parts, int64_t part) const {
    span.begin(
        "part", label_.empty() ? std::string_view("part") : std::string_view(label_),
        {{"part", part}, {"parts", parts}, {"begin", range * part / parts}, {"end", range * (part + 1) / parts}});
  }

  static void learn(SplitRecord& record, bool trying_again, Clock::duration taken, Clock::duration alone) {
    double ratio =
        std::chrono::duration<double>(taken).count() / std::max(std::chrono::duration<double>(alone).count(), 1e-9);
    record.time_ratio = trying_again || record.time_ratio == 0 ? ratio : 0.75 * record.time_ratio + 0.25 * ratio;
    if (splitting_pays(record)) {
      record.backoff = std::chrono::milliseconds(20);
      return;
    }
    if (trying_again) record.backoff = std::min<Clock::duration>(record.backoff * 2, longest_backoff);
    record.next_try = Clock::now() + record.backoff;
  }

  void work(int index) {
    telemetry::timeline::name_this_thread("kiln pool " + std::to_string(index));
    // Not the generation now: a worker that starts after the first loop was
    // published must still see that loop as new.
    uint32_t seen = 0;
    for (;;) {
      if (!poll_until([&] { return generation_.load(std::memory_order_acquire) != seen; }))
        idle_workers_.sleep_while(generation_, seen);
      seen = generation_.load(std::memory_order_acquire);
      if (index < active_.load(std::memory_order_relaxed)) claim_and_run(index);
    }
  }

  const int threads_;
  int64_t most_parts_ = 1;
  std::atomic<int> limit_;
  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};
  std::array<SplitRecord, 65> records_{};  // by bit width of the loop's cost; only the busy_ holder touches them
  // The current loop, published before its generation (release); a worker
  // relies on them only after claiming a part of that generation.
  std::atomic<const std::function<void(int64_t, int64_t)>*> body_{nullptr};
  std::atomic<int64_t> range_{0}, parts_{0};
  std::atomic<int> active_{1};
  std::array<std::atomic<uint64_t>, max_slots> slots_{};
  std::atomic<uint32_t> finished_{0}, generation_{0};
  // The first exception a part of the current loop threw; written before
  // its part counts as finished, read by the caller after every part has.
  std::atomic<bool> failed_{false};
  std::exception_ptr failure_;
  // The name of the kernel the current loop runs, while a profile records;
  // written before the loop's parts are published, read by whoever claims one.
  std::string label_;
  Sleepers idle_workers_, waiting_caller_;
};

// Never destroyed, as the dispatch queue: work still queued at exit runs
// after the exit handlers registered later than the queue's drain, and the
// pool is usually first used by that work. A pool destroyed at exit left a
// loop running on the dispatch thread waiting forever for parts no worker
// would claim; its workers now stay parked until the process ends.
Pool& pool() {
  static Pool* instance = new Pool;
  return *instance;
}

}  // namespace

int thread_count() { return pool().threads(); }
void set_thread_limit(int threads) { pool().set_limit(threads); }

void parallel_for(int64_t range, int64_t cost_per_iteration, const std::function<void(int64_t, int64_t)>& body,
                  int64_t most_parts) {
  if (range <= 0) return;
  Pool& threads = pool();
  int64_t total_cost = range * std::max<int64_t>(cost_per_iteration, 1);
  int64_t parts = threads.parts_for(range, total_cost, most_parts);
  if (parts == 1) return body(0, range);
  if (threads.limit() == 1) return Pool::run_alone(range, parts, body);
  threads.run(range, parts, static_cast<uint64_t>(total_cost), body);
}

}  // namespace kiln::runtime
