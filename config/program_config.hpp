#pragma once
// The first steps both programs (ds4d, ds4d-supervisor) take after parsing their command line:
// load the configuration, set up logging, answer --print-config, log which file was read and warn
// about DS4D_* variables that are no key. One function, so the two programs cannot drift in what
// they accept, report or how they fail.
#include <iosfwd>
#include <optional>
#include <string_view>

#include "config/config.hpp"
#include "config/config_loader.hpp"

namespace ds4::config {

// Fills `out` and returns nullopt when the program should go on. Returns the exit status when it
// must stop now: kExitConfigError after writing "<program>: <error>" to `err` (a bad file, value
// or flag), 0 after writing the effective configuration to `print_to` when that is not null
// (--print-config). `envp` (environ) is scanned for unknown DS4D_* names, one warning each.
std::optional<int> load_program_config(ConfigLoader& loader, std::string_view program, std::ostream* print_to,
                                       std::ostream& err, const char* const* envp, Config& out,
                                       const EnvLookup& env = {});

}  // namespace ds4::config
