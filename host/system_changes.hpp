#pragma once
// The one door through which the supervisor changes the host. Each change (write a file, run a
// command, create a swap file) is described in words; in normal mode it is then carried out and
// logged, in dry-run mode only the description is printed, so `--dry-run` shows exactly the plan
// that a real run would execute. Files are resolved through the Sysroot and commands go through
// the CommandRunner, which together make the whole supervisor testable without root.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "host/command_runner.hpp"
#include "host/sysroot.hpp"

namespace ds4::host {

class SystemChanges {
 public:
  SystemChanges(Sysroot root, CommandRunner& runner, bool dry_run, std::ostream& plan_out);

  const Sysroot& root() const { return root_; }
  bool dry_run() const { return dry_run_; }

  // Writes `content` to the host path (under the root) when it differs from what is there;
  // creates missing parent directories (0755). Returns true when the file changed (or would).
  bool write_file_if_changed(const std::string& host_path, const std::string& content, unsigned mode);
  // Runs a command; a non-zero status throws std::runtime_error with the command and its output.
  // In dry-run mode prints it and returns success.
  CommandResult run_checked(const std::vector<std::string>& argv);
  // Performs an arbitrary change described by `what` (e.g. "create 16.00 GiB swap file ...").
  void perform(const std::string& what, const std::function<void()>& action);
  // Informational line (also printed in dry-run mode, prefixed "note:").
  void note(const std::string& what);

  // Every description, in order (for reports and tests).
  const std::vector<std::string>& log() const { return log_; }

 private:
  void record(const std::string& line);

  Sysroot root_;
  CommandRunner& runner_;
  bool dry_run_;
  std::ostream& out_;
  std::vector<std::string> log_;
};

}  // namespace ds4::host
