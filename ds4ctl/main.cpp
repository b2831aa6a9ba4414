// ds4ctl: plan, inspect, forge, generate, bench. Subcommands live in cmd_<name>.cpp files.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <iostream>

#include "ds4ctl/command_registry.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ds4ctl: administer a ds4d DeepSeek V4 Flash installation"};
  app.require_subcommand(1);
  auto& cmds = ds4ctl::commands();
  std::sort(cmds.begin(), cmds.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, ds4ctl::RunFn>> runs;
  for (auto& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    runs.emplace_back(sub, c.setup(*sub));
  }
  CLI11_PARSE(app, argc, argv);
  try {
    for (auto& [sub, run] : runs)
      if (sub->parsed()) return run();
  } catch (const std::exception& e) {
    std::cerr << "ds4ctl: " << e.what() << "\n";
    return 2;
  }
  return 2;
}
