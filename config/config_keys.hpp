#pragma once
// The key table behind Config: one entry per key with its names in the three sources and its
// parser/printer. See daemon_config.hpp for why it is a table.
#include <functional>
#include <span>
#include <string>

#include "config/config.hpp"

namespace ds4::config {

enum class KeyScope { Both, Daemon, Supervisor };

struct ConfigKey {
  std::string path;   // "server.port"
  std::string flag;   // "--server-port"
  std::string alias;  // "--port" or empty
  std::string env;    // "DS4D_SERVER_PORT"
  std::string type;   // "bytes", "integer", "path", ...
  std::string help;
  KeyScope scope = KeyScope::Both;
  bool repeatable = false;  // the flag may be given more than once: the values join with commas
  // Parses text into the config; throws std::invalid_argument with a message naming the problem
  // (the caller adds where the text came from).
  std::function<void(Config&, const std::string&)> set;
  std::function<std::string(const Config&)> get;  // "" for an unset optional
};

std::span<const ConfigKey> config_keys();
const ConfigKey* find_config_key(const std::string& path);

}  // namespace ds4::config
