#pragma once
// sd_notify(3) for ds4d: readiness, loading progress and the watchdog. Messages go to
// $NOTIFY_SOCKET, which is systemd's own socket when ds4d runs directly under systemd, or the
// private relay socket of ds4d-supervisor when the supervisor launched it (the supervisor then
// forwards them; see supervisor/notify_relay.hpp). Without NOTIFY_SOCKET every call is a no-op.
//
// The watchdog interval is WATCHDOG_USEC, honoured when WATCHDOG_PID is unset or names this
// process (the supervisor sets it to the child's pid). Pings must be tied to forward progress:
// the daemon sends WATCHDOG=1 only when the engine worker's heartbeat says it is alive (see
// worker_heartbeat.hpp), never from a free-running timer.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace ds4::daemon {

class Notifier {
 public:
  Notifier();  // reads NOTIFY_SOCKET / WATCHDOG_USEC / WATCHDOG_PID once

  bool enabled() const { return enabled_; }
  // The watchdog interval, when the service manager asked for one.
  std::optional<std::chrono::microseconds> watchdog_interval() const { return watchdog_; }

  void status(const std::string& text);
  // STATUS plus EXTEND_TIMEOUT_USEC, sent while loading so a long load does not hit TimeoutStartSec.
  void loading(const std::string& text, std::chrono::microseconds extend);
  void ready(const std::string& text);
  void stopping(const std::string& text);
  void watchdog();

  // Raw message (e.g. "ERRNO=12"); returns false when it could not be sent.
  bool send(const std::string& message);

 private:
  bool enabled_ = false;
  std::optional<std::chrono::microseconds> watchdog_;
};

}  // namespace ds4::daemon
