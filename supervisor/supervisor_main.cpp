// ds4d-supervisor: the root process of ds4d.service. It plans memory, prepares the host (swap,
// earlyoom drop-in), then runs ds4d as the service user with a protective oom_score_adj, relays
// its readiness and watchdog to systemd, restarts it on crashes and forwards SIGTERM. See
// supervisor/README.md and the --help text (which the man page is made from).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "config/config_loader.hpp"
#include "config/exit_status.hpp"
#include "config/program_config.hpp"
#include "engine/planner/byte_size.hpp"
#include "host/command_runner.hpp"
#include "supervisor/host_preparation.hpp"
#include "supervisor/notify_relay.hpp"
#include "supervisor/restart_policy.hpp"
#include "supervisor/supervise_loop.hpp"

namespace {

constexpr const char* kDescription =
    "ds4d-supervisor - root supervisor for the ds4d DeepSeek V4 Flash inference daemon\n\n"
    "Runs as root under systemd (Type=notify, NotifyAccess=main, KillMode=mixed). At start it:\n"
    "  1. computes the memory plan for the configured model (weights + sidecar + hot cache + KV +\n"
    "     workspace + reserve against MemTotal) and refuses to start, printing the plan, when the\n"
    "     model does not fit or leaves less headroom than memory.floor (exit status 78);\n"
    "  2. makes sure at least memory.swap_size of swap exists, creating memory.swap_file\n"
    "     (fallocate or zero-fill, NOCOW on btrfs, mode 0600, mkswap, swapon) when it does not;\n"
    "     swap is never turned off;\n"
    "  3. when earlyoom is installed, writes memory.earlyoom_dropin with explicit -m/-s thresholds\n"
    "     below the planned headroom and --avoid for ds4d, and restarts earlyoom only when the\n"
    "     drop-in changed (/etc/default/earlyoom is never edited);\n"
    "  4. starts supervisor.daemon (ds4d) with the same configuration file and daemon flags,\n"
    "     oom_score_adj memory.oom_score_adj (default -900), RLIMIT_MEMLOCK unlimited for\n"
    "     --pin lock, and privileges dropped to supervisor.user (setgroups/setgid/setuid).\n"
    "While running it relays ds4d's sd_notify messages (READY=1, STATUS=, EXTEND_TIMEOUT_USEC=,\n"
    "WATCHDOG=1) from a private notify socket it passes to ds4d as NOTIFY_SOCKET, restarts ds4d\n"
    "after a crash with doubling delays, exits 128+N when ds4d is killed by a signal N it did not\n"
    "send (kernel OOM killer, earlyoom), and on SIGTERM or SIGINT forwards SIGTERM to ds4d, waits\n"
    "up to supervisor.stop_timeout_s, and exits 0.\n\n"
    "Every host change goes through --sysroot, and --dry-run prints the plan and every change\n"
    "without making any.\n";

constexpr const char* kFooter =
    "\nConfiguration: every option above is also a key in the TOML file (section.key as shown in\n"
    "brackets) and an environment variable; precedence is flag > environment > file > default.\n\n"
    "Exit status:\n"
    "  0    stopped on request (SIGTERM/SIGINT), or ds4d exited 0; --dry-run completed\n"
    "  1    start-up failed (swap, earlyoom, launching ds4d) or ds4d crashed too often\n"
    "  78   configuration error, or the memory plan does not fit / is below the floor\n"
    "  128+N  ds4d was killed by signal N that the supervisor did not send\n\n"
    "Environment:\n"
    "  DS4D_CONFIG, DS4D_<SECTION>_<KEY>   configuration (see above)\n"
    "  NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID   set by systemd; relayed, not passed through\n"
    "  JOURNAL_STREAM   set by systemd; selects journal-style log lines (log.format=auto)\n\n"
    "Files:\n"
    "  /etc/ds4d/ds4d.toml   configuration\n"
    "  /proc/meminfo, /proc/swaps   read (under --sysroot)\n"
    "  /var/lib/ds4d/swapfile   default swap file\n"
    "  /etc/systemd/system/earlyoom.service.d/50-ds4d.conf   default earlyoom drop-in\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ds4;
  CLI::App app{kDescription, "ds4d-supervisor"};
  app.footer(kFooter);
  std::string sysroot;
  bool dry_run = false, print_config = false;
  app.add_option("--sysroot", sysroot, "prefix for every host path read or changed (testing, image builds)")
      ->group("Supervisor");
  app.add_flag("--dry-run", dry_run, "print the plan, the host changes and the daemon command; change nothing")
      ->group("Supervisor");
  app.add_flag("--print-config", print_config, "print the effective configuration with each value's origin and exit")
      ->group("Supervisor");
  config::ConfigLoader loader(app, config::KeyScope::Both);  // every key; daemon ones are forwarded
  CLI11_PARSE(app, argc, argv);

  config::Config cfg;
  if (auto done = config::load_program_config(loader, "ds4d-supervisor", print_config ? &std::cout : nullptr, std::cerr,
                                              environ, cfg))
    return *done;
  const host::Sysroot root(sysroot);

  planner::Plan plan;
  try {
    supervisor::notify_upstream("STATUS=Planning memory for " + cfg.model.path);
    plan = supervisor::plan_for_config(cfg, root);
  } catch (const std::exception& e) {
    spdlog::error("memory plan failed: {}", e.what());
    supervisor::notify_upstream("STATUS=Memory plan failed: " + std::string(e.what()));
    return config::kExitConfigError;
  }
  const std::string report = planner::render_report(plan);
  if (plan.verdict != planner::Verdict::Fits) {
    std::cerr << report;
    spdlog::error("refusing to start ds4d: the memory plan says '{}'", planner::verdict_name(plan.verdict));
    supervisor::notify_upstream(std::string("STATUS=Refusing to start: memory plan ") +
                                planner::verdict_name(plan.verdict));
    return config::kExitConfigError;
  }
  if (dry_run) std::cout << report;
  else
    spdlog::info("memory plan: total {} of MemTotal {}, headroom {} (floor {})", planner::format_gib(plan.total_bytes),
                 planner::format_gib(plan.input.mem_total_bytes),
                 planner::format_gib(static_cast<uint64_t>(plan.headroom_bytes)),
                 planner::format_gib(plan.input.floor_bytes));

  host::ProcessRunner runner;
  host::SystemChanges changes(root, runner, dry_run, std::cout);
  try {
    supervisor::notify_upstream("STATUS=Preparing host (swap, earlyoom)\nEXTEND_TIMEOUT_USEC=300000000");
    supervisor::prepare_host(cfg, plan, changes);
  } catch (const std::invalid_argument& e) {
    spdlog::error("{}", e.what());
    return config::kExitConfigError;
  } catch (const std::exception& e) {
    spdlog::error("preparing the host failed: {}", e.what());
    supervisor::notify_upstream("STATUS=Preparing the host failed: " + std::string(e.what()));
    return 1;
  }

  supervisor::LoopSettings loop;
  loop.launch.argv = {cfg.supervisor.daemon};
  if (!loader.config_file().empty()) {
    loop.launch.argv.push_back("--config");
    loop.launch.argv.push_back(loader.config_file());
  }
  for (const std::string& f : loader.given_flags(config::KeyScope::Daemon)) loop.launch.argv.push_back(f);
  loop.launch.oom_score_adj = cfg.memory.oom_score_adj;
  const bool root_user = geteuid() == 0;
  loop.launch.unlimited_memlock = root_user && cfg.model.pin == config::PinMode::Lock;
  std::string as_user = "the current user";
  if (root_user && !cfg.supervisor.user.empty() && cfg.supervisor.user != "root") {
    try {
      loop.launch.identity = host::lookup_service_identity(cfg.supervisor.user);
      as_user = "user " + cfg.supervisor.user;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return config::kExitConfigError;
    }
  } else if (!root_user) {
    changes.note("not running as root: ds4d runs as the current user, supervisor.user '" + cfg.supervisor.user +
                 "' is not applied");
  }
  loop.restart.initial_delay = std::chrono::seconds(cfg.supervisor.restart_delay_s);
  loop.restart.max_delay = std::chrono::seconds(cfg.supervisor.restart_max_delay_s);
  loop.restart.max_restarts = cfg.supervisor.max_restarts;
  loop.restart.window = std::chrono::seconds(cfg.supervisor.restart_window_s);
  loop.stop_timeout = std::chrono::seconds(cfg.supervisor.stop_timeout_s);

  std::string cmd = host::describe_command(loop.launch.argv);
  const std::string launch_line = "launch " + cmd + " as " + as_user + " with oom_score_adj " +
                                  std::to_string(cfg.memory.oom_score_adj) +
                                  (loop.launch.unlimited_memlock ? ", RLIMIT_MEMLOCK unlimited" : "") +
                                  ", NOTIFY_SOCKET = the supervisor's relay socket";
  if (dry_run) {
    std::cout << "would: " << launch_line << "\n";
    return 0;
  }
  spdlog::info("{}", launch_line);
  try {
    return supervisor::run_supervise_loop(std::move(loop));
  } catch (const std::exception& e) {
    spdlog::critical("supervisor failed: {}", e.what());
    return 1;
  }
}
