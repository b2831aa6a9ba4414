#pragma once
// The HTTP server's configuration (gateway/transport/server.hpp ServerConfig) from the [server] keys.
// Every field comes from a key, with the server's own default (a test compares them), except
// api_key, which run_daemon reads from server.api_key_file. ServerConfig is a plain struct.
#include <string>
#include <vector>

#include "config/config.hpp"
#include "gateway/transport/server.hpp"

namespace ds4::daemon {

// Returns the server configuration for `cfg`; api_key stays empty.
http::ServerConfig http_server_config(const config::Config& cfg);

// "a, b,c" -> {"a", "b", "c"}; empty items are dropped.
std::vector<std::string> split_list(const std::string& text);

}  // namespace ds4::daemon
