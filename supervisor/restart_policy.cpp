// Child exit → restart or exit; see restart_policy.hpp.
#include "supervisor/restart_policy.hpp"

#include <csignal>
#include <cstring>

namespace ds4::supervisor {
namespace {

bool is_crash_signal(int sig) {
  return sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGSYS ||
         sig == SIGTRAP;
}

}  // namespace

std::string describe_exit(const ChildExit& e) {
  if (!e.signaled) return "exited with status " + std::to_string(e.code);
  const char* abbrev = sigabbrev_np(e.code);
  return std::string("killed by ") + (abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(e.code));
}

ExitDecision RestartPolicy::on_exit(const ChildExit& e, bool stop_requested,
                                    std::chrono::steady_clock::time_point now) {
  ExitDecision d;
  const std::string what = "ds4d " + describe_exit(e);
  if (stop_requested) {
    d.exit_code = 0;
    d.reason = what + " after the supervisor asked it to stop";
    return d;
  }
  if (!e.signaled && e.code == 0) {
    d.exit_code = 0;
    d.reason = what + "; stopping";
    return d;
  }
  if (!e.signaled && e.code == config::kExitConfigError) {
    d.exit_code = config::kExitConfigError;
    d.reason = what + " (configuration error); not restarting";
    return d;
  }
  if (e.signaled && !is_crash_signal(e.code)) {
    d.exit_code = 128 + e.code;
    d.reason = what +
               ", a signal the supervisor did not send (kernel OOM killer or earlyoom?); exiting so "
               "systemd restarts the unit";
    return d;
  }
  while (!crashes_.empty() && now - crashes_.front() > s_.window) crashes_.pop_front();
  crashes_.push_back(now);
  if (crashes_.size() > s_.max_restarts) {
    d.exit_code = 1;
    d.reason = what + "; " + std::to_string(crashes_.size()) + " crashes within " + std::to_string(s_.window.count()) +
               " s, giving up";
    return d;
  }
  auto delay = s_.initial_delay;
  for (size_t i = 1; i < crashes_.size() && delay < s_.max_delay; ++i) delay *= 2;
  if (delay > s_.max_delay) delay = s_.max_delay;
  d.restart = true;
  d.delay = delay;
  d.reason = what + "; restarting in " + std::to_string(delay.count()) + " s (crash " +
             std::to_string(crashes_.size()) + " of at most " + std::to_string(s_.max_restarts) + ")";
  return d;
}

}  // namespace ds4::supervisor
