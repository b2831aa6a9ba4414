#pragma once
// ds4d's life: listen at once (so /health answers 503 "Loading model" during the load), load the
// model on a loader thread with STATUS=/EXTEND_TIMEOUT_USEC= progress, pin the weights, hand the
// engine to the serving layer, send READY=1, then ping the watchdog while the engine worker is
// alive, until SIGTERM/SIGINT: STOPPING=1, drain in-flight requests (server.drain_timeout_s),
// exit 0.
//
// Exit status: 0 stopped on request; 1 runtime failure (e.g. the port is taken); 78 (EX_CONFIG)
// the model cannot be loaded or pinned with this configuration (restarting would not help).
#include "config/config.hpp"
#include "config/exit_status.hpp"

namespace ds4::daemon {

int run_daemon(const config::Config& cfg);

}  // namespace ds4::daemon
