// Accepted model names and aliases. See model_names.hpp.
#include "gateway/api/model_names.hpp"

#include <algorithm>

#include "gateway/serving/engine_backend.hpp"

namespace ds4::http {

std::string served_model_name(const ServerConfig& config, const serving::EngineBackend& backend) {
  return config.model_name.empty() ? backend.model_id() : config.model_name;
}

namespace {

bool alias_matches(std::string_view alias, std::string_view name) {
  if (alias.ends_with('*')) return name.starts_with(alias.substr(0, alias.size() - 1));
  return alias == name;
}

}  // namespace

bool model_name_accepted(const ServerConfig& config, const serving::EngineBackend& backend,
                         std::string_view requested) {
  if (requested.empty() || requested == served_model_name(config, backend) || requested == backend.model_id())
    return true;
  return std::any_of(config.model_aliases.begin(), config.model_aliases.end(),
                     [&](const std::string& alias) { return alias_matches(alias, requested); });
}

std::optional<Reply> unknown_model_reply(const ServerConfig& config, const serving::EngineBackend& backend,
                                         std::string_view requested, ApiStyle style) {
  if (model_name_accepted(config, backend, requested)) return std::nullopt;
  std::string names;
  for (const auto& alias : config.model_aliases) names += (names.empty() ? "" : ", ") + alias;
  std::string message = "model '" + std::string(requested) + "' is not served here: this server serves '" +
                        served_model_name(config, backend) + "'" +
                        (names.empty() ? std::string(" and accepts no aliases") : " and accepts the aliases " + names) +
                        "; send one of those names, or add this one to server.model_aliases";
  return error_reply(style, 404, message, "model", "model_not_found");
}

std::vector<std::string> listed_model_names(const ServerConfig& config, const serving::EngineBackend& backend) {
  std::vector<std::string> out{served_model_name(config, backend)};
  for (const auto& alias : config.model_aliases)
    if (!alias.ends_with('*') && std::find(out.begin(), out.end(), alias) == out.end()) out.push_back(alias);
  return out;
}

std::string response_model(const ServerConfig& config, const serving::EngineBackend& backend,
                           const std::string& requested) {
  return requested.empty() ? served_model_name(config, backend) : requested;
}

}  // namespace ds4::http
