#include "ds4ctl/command_registry.hpp"

namespace ds4ctl {
std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}
}  // namespace ds4ctl
