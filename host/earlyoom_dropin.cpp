// earlyoom drop-in policy, rendering and installation; see earlyoom_dropin.hpp.
#include "host/earlyoom_dropin.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace ds4::host {

EarlyoomPolicy earlyoom_policy(uint64_t mem_total, int64_t headroom, uint64_t floor, std::optional<double> term,
                               std::optional<double> kill) {
  if (mem_total == 0) throw std::invalid_argument("earlyoom policy: MemTotal is 0");
  auto pct = [&](double bytes) { return std::floor(bytes * 10000.0 / static_cast<double>(mem_total)) / 100.0; };
  EarlyoomPolicy p;
  p.term_percent = term ? *term : pct(static_cast<double>(floor) / 2);
  p.kill_percent = kill ? *kill : pct(static_cast<double>(floor) / 4);
  if (p.term_percent <= 0 || p.term_percent >= 100 || p.kill_percent < 0 || p.kill_percent > p.term_percent)
    throw std::invalid_argument(
        fmt::format("earlyoom thresholds out of range: SIGTERM {:.2f} %, SIGKILL {:.2f} % "
                    "(need 0 ≤ kill ≤ term < 100)",
                    p.term_percent, p.kill_percent));
  const double term_bytes = p.term_percent / 100.0 * static_cast<double>(mem_total);
  if (headroom <= 0 || term_bytes >= static_cast<double>(headroom))
    throw std::invalid_argument(
        fmt::format("earlyoom SIGTERM threshold {:.2f} % of MemTotal ({:.2f} GiB) is not below the planned headroom "
                    "({:.2f} GiB): earlyoom would kill at steady state",
                    p.term_percent, term_bytes / 0x1p30, static_cast<double>(headroom) / 0x1p30));
  return p;
}

std::string earlyoom_exec_start(const EarlyoomPolicy& p, const std::string& binary) {
  std::string regex;
  for (char c : p.avoid_regex) regex += c == '$' ? std::string("$$") : std::string(1, c);
  return fmt::format("{} $EARLYOOM_ARGS -m {:.2f},{:.2f} -s 100,100 --avoid '{}'", binary, p.term_percent,
                     p.kill_percent, regex);
}

std::string render_earlyoom_dropin(const EarlyoomPolicy& p, const std::string& binary) {
  return "# Written by ds4d-supervisor at every start from the ds4d memory plan; edits are overwritten.\n"
         "# Thresholds: memory.earlyoom_term_percent / memory.earlyoom_kill_percent in /etc/ds4d/ds4d.toml.\n"
         "[Service]\n"
         "ExecStart=\n"
         "ExecStart=" +
         earlyoom_exec_start(p, binary) +
         "\n"
         "OOMScoreAdjust=-100\n";
}

const char* earlyoom_result_name(EarlyoomResult r) {
  switch (r) {
    case EarlyoomResult::NotManaged: return "not managed";
    case EarlyoomResult::NotInstalled: return "earlyoom not installed";
    case EarlyoomResult::Unchanged: return "drop-in unchanged";
    case EarlyoomResult::Updated: return "drop-in written, earlyoom restarted";
  }
  return "?";
}

EarlyoomResult ensure_earlyoom_dropin(const EarlyoomSettings& s, const EarlyoomPolicy& p, SystemChanges& changes) {
  if (!s.manage) {
    changes.note("earlyoom: not managed (memory.earlyoom = false)");
    return EarlyoomResult::NotManaged;
  }
  const Sysroot& root = changes.root();
  const bool installed = std::filesystem::exists(root.path("/lib/systemd/system/earlyoom.service")) ||
                         std::filesystem::exists(root.path("/usr/lib/systemd/system/earlyoom.service"));
  if (!installed) {
    changes.note("earlyoom: not installed; no drop-in written");
    return EarlyoomResult::NotInstalled;
  }
  if (!changes.write_file_if_changed(s.dropin_path, render_earlyoom_dropin(p, s.binary), 0644)) {
    changes.note("earlyoom: drop-in " + s.dropin_path + " is current; not restarting earlyoom");
    return EarlyoomResult::Unchanged;
  }
  changes.run_checked({"systemctl", "daemon-reload"});
  changes.run_checked({"systemctl", "try-restart", "earlyoom.service"});
  return EarlyoomResult::Updated;
}

}  // namespace ds4::host
