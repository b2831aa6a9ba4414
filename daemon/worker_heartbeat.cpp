// Engine worker heartbeat; see worker_heartbeat.hpp.
#include "daemon/worker_heartbeat.hpp"

namespace ds4::daemon {
namespace {
int64_t ns(WorkerHeartbeat::Clock::time_point t) {
  const int64_t v = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return v == 0 ? 1 : v;
}
}  // namespace

void WorkerHeartbeat::begin_call(Clock::time_point now) { call_started_ns_.store(ns(now)); }

void WorkerHeartbeat::end_call(Clock::time_point) {
  call_started_ns_.store(0);
  calls_.fetch_add(1);
}

bool WorkerHeartbeat::alive(Clock::time_point now, std::chrono::milliseconds stall_limit) const {
  const int64_t started = call_started_ns_.load();
  if (started == 0) return true;
  return ns(now) - started <= std::chrono::duration_cast<std::chrono::nanoseconds>(stall_limit).count();
}

}  // namespace ds4::daemon
