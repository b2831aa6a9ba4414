// ds4d: the DeepSeek V4 Flash inference daemon (engine + OpenAI-compatible HTTP gateway in one
// process). Normally started by ds4d-supervisor; can run on its own. See --help (the man page is
// made from it) and daemon/README.md.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "config/config_loader.hpp"
#include "config/exit_status.hpp"
#include "config/log_setup.hpp"
#include "config/program_config.hpp"
#include "daemon/crash_report.hpp"
#include "daemon/daemon_run.hpp"

namespace {

constexpr const char* kDescription =
    "ds4d - DeepSeek V4 Flash inference daemon with an OpenAI-compatible HTTP API\n\n"
    "Loads the model GGUF (model.path), pins its weights (--pin: none, lock = MAP_POPULATE + mlock,\n"
    "cuda = CUDA host registration through the driver, libcuda.so.1), and serves /v1/chat/completions,\n"
    "/v1/completions, /v1/models, /health and /metrics on server.host:server.port. The port is open\n"
    "during the load: /health answers 503 \"Loading model\" until the model is ready.\n\n"
    "Memory: every memory.poll_ms it reads MemAvailable (memory.meminfo_path) and PSI memory pressure\n"
    "(memory.psi_path), exports them as ds4d_* metrics, and refuses new requests with 503 and a message\n"
    "naming the cause while MemAvailable is below memory.floor or PSI 'full' avg10 is above\n"
    "memory.psi_full_avg10_limit.\n\n"
    "systemd: with NOTIFY_SOCKET set it reports STATUS= and EXTEND_TIMEOUT_USEC= while loading,\n"
    "READY=1 when serving, WATCHDOG=1 (when WATCHDOG_USEC asks for it) only while the engine worker\n"
    "is not stuck in one call longer than server.engine_stall_s, and STOPPING=1 on SIGTERM. Under\n"
    "ds4d-supervisor, NOTIFY_SOCKET is the supervisor's relay socket.\n\n"
    "SIGTERM or SIGINT: stop accepting, let in-flight requests finish for up to\n"
    "server.drain_timeout_s, exit 0. A fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints the\n"
    "signal, its address, the thread and the call stack on stderr, then ends the process with it.\n";

constexpr const char* kFooter =
    "\nConfiguration: every option above is also a key in the TOML file (section.key as shown in\n"
    "brackets) and an environment variable; precedence is flag > environment > file > default.\n"
    "Keys used only by ds4d-supervisor are accepted in the file and environment.\n\n"
    "Exit status:\n"
    "  0    stopped by SIGTERM/SIGINT after draining\n"
    "  1    runtime failure (e.g. the address is in use)\n"
    "  78   configuration error, or the model cannot be loaded or pinned (e.g. RLIMIT_MEMLOCK)\n\n"
    "Environment:\n"
    "  DS4D_CONFIG, DS4D_<SECTION>_<KEY>   configuration (see above)\n"
    "  NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID   service manager protocol (sd_notify(3))\n"
    "  JOURNAL_STREAM   when set (and log.format=auto), log lines carry '<N>' priority prefixes\n"
    "                   and no timestamps or colours\n\n"
    "Files:\n"
    "  /etc/ds4d/ds4d.toml   configuration\n"
    "  /proc/meminfo, /proc/pressure/memory   memory watch\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ds4;
  CLI::App app{kDescription, "ds4d"};
  app.footer(kFooter);
  bool print_config = false;
  app.add_flag("--print-config", print_config, "print the effective configuration with each value's origin and exit");
  config::ConfigLoader loader(app, config::KeyScope::Daemon);
  CLI11_PARSE(app, argc, argv);
  config::Config cfg;
  if (auto done =
          config::load_program_config(loader, "ds4d", print_config ? &std::cout : nullptr, std::cerr, environ, cfg))
    return *done;
  daemon::install_crash_report(config::logging_style(cfg.log, std::getenv("JOURNAL_STREAM")) == "journal");
  try {
    return daemon::run_daemon(cfg);
  } catch (const std::exception& e) {
    spdlog::critical("ds4d failed: {}", e.what());
    return config::kExitRuntime;
  }
}
