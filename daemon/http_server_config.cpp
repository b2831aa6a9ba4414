// [server] keys -> http::ServerConfig. See http_server_config.hpp.
#include "daemon/http_server_config.hpp"

#include <filesystem>
#include <sstream>

namespace ds4::daemon {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

http::ServerConfig http_server_config(const config::Config& cfg) {
  const auto& s = cfg.server;
  http::ServerConfig hc;
  hc.host = s.host;
  hc.port = s.port;
  hc.io_threads = s.io_threads;
  hc.handler_threads = s.handler_threads;
  hc.cors_origins = split_list(s.cors_origins);
  hc.allowed_hosts = split_list(s.allowed_hosts);
  hc.allow_unauthenticated_remote = s.allow_unauthenticated_remote;
  hc.max_header_bytes = s.max_header_bytes;
  hc.max_body_bytes = s.max_body_bytes;
  hc.max_tokenize_response_bytes = s.max_tokenize_response_bytes;
  hc.max_connections = s.max_connections;
  hc.max_inflight_body_bytes = s.max_inflight_body_bytes;
  hc.read_timeout = std::chrono::seconds(s.read_timeout_s);
  hc.idle_timeout = std::chrono::seconds(s.idle_timeout_s);
  hc.write_timeout = std::chrono::seconds(s.write_timeout_s);
  hc.request_timeout = std::chrono::seconds(s.request_timeout_s);
  hc.model_name = s.model_name;
  hc.model_aliases = split_list(s.model_aliases);
  // Responses' previous_response_id records live next to the KV checkpoints and survive
  // restarts as they do; without a cache directory they are in memory only.
  if (!cfg.cache.dir.empty()) hc.response_dir = (std::filesystem::path(cfg.cache.dir) / "responses").string();
  hc.contract_mode = s.contracts;
  return hc;
}

}  // namespace ds4::daemon
