#pragma once
// External commands (mkswap, swapon, systemctl) run through this interface. The real runner
// forks and execs with stdout+stderr captured; tests substitute a recorder that notes the argv
// and answers with a chosen status, so the supervisor's system changes are observable without
// root and without touching the host.
#include <string>
#include <vector>

namespace ds4::host {

struct CommandResult {
  int status = 0;      // exit status; 128+N when killed by signal N; 127 when exec failed
  std::string output;  // stdout and stderr together
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult run(const std::vector<std::string>& argv) = 0;
};

// fork + execvp, PATH lookup, output captured through a pipe.
class ProcessRunner final : public CommandRunner {
 public:
  CommandResult run(const std::vector<std::string>& argv) override;
};

// "mkswap /var/lib/ds4d/swapfile" — argv joined for messages, with quotes where needed.
std::string describe_command(const std::vector<std::string>& argv);

}  // namespace ds4::host
