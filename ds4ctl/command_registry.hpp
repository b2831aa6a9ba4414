#pragma once
// Subcommands register themselves at static-initialisation time, so adding a command is adding
// one file (cmd_<name>.cpp) and nothing else. Each registration adds a CLI11 subcommand and
// returns the function that runs it; the function returns the process exit status.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace ds4ctl {

using RunFn = std::function<int()>;
using SetupFn = std::function<RunFn(CLI::App& sub)>;

struct Command {
  std::string name;
  std::string help;
  SetupFn setup;
};

std::vector<Command>& commands();

struct Register {
  Register(std::string name, std::string help, SetupFn setup) {
    commands().push_back({std::move(name), std::move(help), std::move(setup)});
  }
};

}  // namespace ds4ctl
