// Engine worker heartbeat; see worker_heartbeat.hpp.
#include "daemon/worker_heartbeat.hpp"

namespace ds4::daemon {
namespace {
int64_t ns(WorkerHeartbeat::Clock::time_point t) {
  const int64_t v = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return v == 0 ? 1 : v;
}
}  // namespace

WorkerHeartbeat::Call WorkerHeartbeat::begin_call(Clock::time_point now) {
  std::lock_guard lock(mu_);
  return started_ns_.insert(ns(now));
}

void WorkerHeartbeat::end_call(Call call, Clock::time_point) {
  {
    std::lock_guard lock(mu_);
    started_ns_.erase(call);
  }
  calls_.fetch_add(1);
}

bool WorkerHeartbeat::alive(Clock::time_point now, std::chrono::milliseconds stall_limit) const {
  std::lock_guard lock(mu_);
  if (started_ns_.empty()) return true;
  return ns(now) - *started_ns_.begin() <= std::chrono::duration_cast<std::chrono::nanoseconds>(stall_limit).count();
}

}  // namespace ds4::daemon
