#pragma once
// The engine worker's heartbeat, which drives WATCHDOG=1.
//
// The daemon wraps the serving layer's engine sequence so that every engine call (a prefill
// chunk, one decode step) marks its start and end here. The watchdog check then asks: is the
// worker inside an engine call that has run longer than the stall limit? If so the engine is
// stuck and no ping is sent, and systemd's WatchdogSec kills and restarts the service. An idle
// worker (waiting for jobs) is alive; the check also takes the serving queue lock (done by the
// caller), so a deadlocked service stops the pings too.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace ds4::daemon {

class WorkerHeartbeat {
 public:
  using Clock = std::chrono::steady_clock;

  void begin_call(Clock::time_point now = Clock::now());
  void end_call(Clock::time_point now = Clock::now());

  // False only while a call has been running for longer than `stall_limit`.
  bool alive(Clock::time_point now, std::chrono::milliseconds stall_limit) const;
  uint64_t calls() const { return calls_.load(); }

 private:
  std::atomic<int64_t> call_started_ns_{0};  // 0: not inside an engine call
  std::atomic<uint64_t> calls_{0};
};

}  // namespace ds4::daemon
