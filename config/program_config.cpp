#include "config/program_config.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <ostream>

#include "config/exit_status.hpp"
#include "config/log_setup.hpp"

namespace ds4::config {

std::optional<int> load_program_config(ConfigLoader& loader, std::string_view program, std::ostream* print_to,
                                       std::ostream& err, const char* const* envp, Config& out, const EnvLookup& env) {
  try {
    out = loader.load(env);
    const char* journal = env ? env("JOURNAL_STREAM") : std::getenv("JOURNAL_STREAM");
    setup_logging(out.log, journal);
  } catch (const std::exception& e) {
    err << program << ": " << e.what() << "\n";
    return kExitConfigError;
  }
  if (print_to != nullptr) {
    *print_to << render_config(out, loader.origins());
    return 0;
  }
  if (!loader.config_file().empty()) spdlog::info("configuration from {}", loader.config_file());
  for (const std::string& name : unknown_environment(envp))
    spdlog::warn("{} is set but is not a configuration variable (see {} --help); ignored", name, program);
  return std::nullopt;
}

}  // namespace ds4::config
