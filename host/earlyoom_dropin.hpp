#pragma once
// The earlyoom drop-in that keeps earlyoom from killing the model at its planned steady state.
//
// The thresholds are derived from the plan (SIGTERM at half the floor, SIGKILL at a quarter, as
// percentages of MemTotal, `-s 100,100`) and checked to lie below the planned headroom; `--avoid`
// names the daemon's and supervisor's comm. The drop-in replaces ExecStart after $EARLYOOM_ARGS;
// a changed drop-in restarts earlyoom, an unchanged one restarts nothing. Why each flag and why
// ExecStart: docs/memory.md §earlyoom-thresholds, §earlyoom-victims, §the-earlyoom-drop-in.
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
