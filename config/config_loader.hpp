#pragma once
// Loads a Config from defaults, the TOML file, DS4D_* environment variables and command-line
// flags, in that rising order of precedence, remembering where each value came from.
//
// Use: construct with the CLI11 app (it adds --config and one flag per key in scope), parse the
// command line, then call load(). The config file is --config, else DS4D_CONFIG, else
// /etc/ds4d/ds4d.toml; the default file may be absent (defaults apply), a named one may not.
// Every error names its source: "file:line:col: server.port: ...", "DS4D_SERVER_PORT: ...",
// "--server-port: ...".
#include <CLI/CLI.hpp>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/config_keys.hpp"

namespace ds4::config {

inline constexpr const char* kDefaultConfigFile = "/etc/ds4d/ds4d.toml";

// The DS4D_* variables in `envp` (environ) that are no configuration key's variable and not one
// of the other variables ds4d reads (DS4D_CONFIG, DS4D_ISA): most likely typos, which would
// otherwise do nothing without a word. The daemon and the supervisor warn about each.
std::vector<std::string> unknown_environment(const char* const* envp);

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using EnvLookup = std::function<const char*(const char*)>;

class ConfigLoader {
 public:
  // Keys whose scope is `KeyScope::Both` or `scope` get flags; `scope` both: every key does.
  ConfigLoader(CLI::App& app, KeyScope scope);

  // Call after app.parse(). `env` defaults to ::getenv.
  Config load(const EnvLookup& env = {});

  const std::string& config_file() const { return config_file_; }  // "" when none was read
  // key path -> "default", "file <path>", "env DS4D_X", "flag --x"
  const std::map<std::string, std::string>& origins() const { return origins_; }
  // The "--flag=value" arguments given on the command line for keys in `scope` (or both), to
  // pass on to a child (the supervisor forwards daemon flags to ds4d).
  std::vector<std::string> given_flags(KeyScope scope) const;

 private:
  struct Bound {
    const ConfigKey* key;
    CLI::Option* option;
    std::string* value;
  };
  void apply_file(Config& c, const std::string& path);

  KeyScope scope_;
  std::string config_flag_;
  CLI::Option* config_option_ = nullptr;
  std::deque<std::string> storage_;
  std::vector<Bound> bound_;
  std::string config_file_;
  std::map<std::string, std::string> origins_;
};

// The effective configuration as TOML, each key annotated with its origin.
std::string render_config(const Config& c, const std::map<std::string, std::string>& origins);

}  // namespace ds4::config
