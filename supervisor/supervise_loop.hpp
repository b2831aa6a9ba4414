#pragma once
// The supervisor's run loop: one thread, one poll() over a signalfd (SIGTERM, SIGINT, SIGHUP,
// SIGCHLD) and the notify relay socket, with deadlines for the restart backoff, the stop timeout
// and the supervisor's own watchdog pings while no daemon is running.
//
// * starts ds4d (daemon_launch.hpp) and relays its sd_notify messages (notify_relay.hpp);
// * SIGTERM/SIGINT: sends STOPPING=1 upstream, forwards SIGTERM to ds4d, and SIGKILLs it after
//   supervisor.stop_timeout_s; exits 0 once it is gone;
// * SIGHUP is ignored (ds4d has no reload);
// * ds4d exiting: RestartPolicy decides between restart-with-backoff and exiting, and with what.
#include <chrono>

#include "supervisor/daemon_launch.hpp"
#include "supervisor/restart_policy.hpp"

namespace ds4::supervisor {

struct LoopSettings {
  supervisor::LaunchSpec launch;
  supervisor::RestartSettings restart;
  std::chrono::seconds stop_timeout{90};
};

// Returns the supervisor's exit status.
int run_supervise_loop(LoopSettings settings);

}  // namespace ds4::supervisor
