#pragma once
// The engine worker's heartbeat, which drives WATCHDOG=1.
//
// The daemon wraps the serving layer's engine sequences so that every engine call (a prefill
// chunk, one decode step) marks its start and end here; with several sessions their threads'
// calls overlap, so each call is tracked on its own. The watchdog check then asks: is any engine
// call running for longer than the stall limit? If so the engine is
// stuck and no ping is sent, and systemd's WatchdogSec kills and restarts the service. An idle
// worker (waiting for jobs) is alive; the check also takes the serving queue lock (done by the
// caller), so a deadlocked service stops the pings too.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>

namespace ds4::daemon {

class WorkerHeartbeat {
 public:
  using Clock = std::chrono::steady_clock;

  // begin_call returns the call's handle for its end_call (thread-safe).
  using Call = std::multiset<int64_t>::iterator;
  Call begin_call(Clock::time_point now = Clock::now());
  void end_call(Call call, Clock::time_point now = Clock::now());

  // False only while some call has been running for longer than `stall_limit`.
  bool alive(Clock::time_point now, std::chrono::milliseconds stall_limit) const;
  uint64_t calls() const { return calls_.load(); }

 private:
  mutable std::mutex mu_;
  std::multiset<int64_t> started_ns_;  // the calls running now
  std::atomic<uint64_t> calls_{0};
};

}  // namespace ds4::daemon
