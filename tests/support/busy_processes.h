// Processes that keep cores busy (plain integer loops, forked), for tests and
// benchmarks of kiln on a shared machine; ended by their pid.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace kiln::testing {

class BusyProcesses {
 public:
  explicit BusyProcesses(int count) {
    for (int i = 0; i < count; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        volatile uint64_t spin = 0;
        for (;;) spin = spin * 6364136223846793005ull + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyProcesses() { stop(); }
  BusyProcesses(const BusyProcesses&) = delete;
  BusyProcesses& operator=(const BusyProcesses&) = delete;

  void stop() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
    pids_.clear();
  }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace kiln::testing
