#pragma once
// The earlyoom drop-in that keeps earlyoom from killing the model at its planned steady state.
//
// Debian 12's earlyoom 1.7 defaults (SIGTERM at 10 % MemAvailable, SIGKILL at 5 %) fire at once on
// a 128 GB host with 3-8 GB free (docs/memory.md §earlyoom-thresholds). We therefore write explicit thresholds derived
// from the plan: SIGTERM when MemAvailable falls to half the floor, SIGKILL at a quarter, as a
// percentage of MemTotal (`-m term,kill`, decimals allowed), and `-s 100,100` so the swap test
// always passes and memory alone decides (a lone `-s 100` would leave the kill level at 50 %).
// Both thresholds must lie below the planned headroom, or earlyoom would fire at steady state;
// that is checked. `--avoid` names the daemon's and the supervisor's comm ("ds4d",
// "ds4d-supervisor", ≤ 15 bytes) in one regex (a repeated --avoid keeps only the last), with `$`
// written `$$` as systemd requires in ExecStart. --avoid alone does not protect an 80 GiB process;
// oom_score_adj does (oom_adjust.hpp).
//
// The drop-in overrides ExecStart, not Environment=, because /etc/default/earlyoom (earlyoom's
// conffile, which we never edit) is read with EnvironmentFile= and would win. Our flags come after
// $EARLYOOM_ARGS so they take precedence over duplicates. earlyoom has no config reload, so after
// a changed drop-in we run `systemctl daemon-reload` and `systemctl try-restart earlyoom.service`;
// an unchanged drop-in restarts nothing.
#include <cstdint>
#include <optional>
#include <string>

#include "host/system_changes.hpp"

namespace ds4::host {

struct EarlyoomPolicy {
  double term_percent = 0;  // of MemTotal
  double kill_percent = 0;
  std::string avoid_regex = "^(ds4d|ds4d-supervisor)$";
};

// Thresholds from the plan; explicit percentages override the derived ones. Throws
// std::invalid_argument when a threshold would fire at the planned steady state (its byte
// equivalent is not below `planned_headroom_bytes`) or kill > term.
EarlyoomPolicy earlyoom_policy(uint64_t mem_total_bytes, int64_t planned_headroom_bytes, uint64_t floor_bytes,
                               std::optional<double> term_percent = {}, std::optional<double> kill_percent = {});

// "/usr/bin/earlyoom $EARLYOOM_ARGS -m 1.68,0.84 -s 100,100 --avoid '^(ds4d|ds4d-supervisor)$$'"
std::string earlyoom_exec_start(const EarlyoomPolicy& p, const std::string& binary = "/usr/bin/earlyoom");
std::string render_earlyoom_dropin(const EarlyoomPolicy& p, const std::string& binary = "/usr/bin/earlyoom");

struct EarlyoomSettings {
  bool manage = true;
  std::string dropin_path = "/etc/systemd/system/earlyoom.service.d/50-ds4d.conf";
  std::string binary = "/usr/bin/earlyoom";
};

enum class EarlyoomResult { NotManaged, NotInstalled, Unchanged, Updated };
const char* earlyoom_result_name(EarlyoomResult r);

// earlyoom counts as installed when its unit file exists under /lib/systemd/system or
// /usr/lib/systemd/system (in the sysroot).
EarlyoomResult ensure_earlyoom_dropin(const EarlyoomSettings& s, const EarlyoomPolicy& p, SystemChanges& changes);

}  // namespace ds4::host
