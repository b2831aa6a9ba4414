#pragma once
// Which model names a request may ask for, and which names /v1/models lists.
//
// One model is served. Its name is server.model_name (else the backend's id). Clients name a
// model in every request, and the agents send what they are configured with: Claude Code a
// claude-* name unless told otherwise (ANTHROPIC_MODEL / --model), Codex and opencode the name
// in their provider config. server.model_aliases lists the other names accepted: exact names,
// or prefixes ending in '*' ("claude-*"); "*" (the default) accepts any name, as the reference
// server does (it echoes the request's model verbatim). With a narrower list, a name that is
// neither the served one nor an alias is answered 404 model_not_found in the API's error shape,
// naming what is served, so a typo in a client's config is a clear error instead of a silent
// fallback. A request without a model is always the served one. Responses carry the request's
// name (clients match on it).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/api/endpoint_support.hpp"
#include "gateway/transport/server.hpp"

namespace ds4::http {

// The name the model is served under: server.model_name, else the backend's id.
std::string served_model_name(const ServerConfig& config, const serving::EngineBackend& backend);

// True when `requested` ("" included) names the served model or matches an alias.
bool model_name_accepted(const ServerConfig& config, const serving::EngineBackend& backend, std::string_view requested);

// The 404 for a name that is not accepted, in the API's shape; nullopt when it is accepted.
std::optional<Reply> unknown_model_reply(const ServerConfig& config, const serving::EngineBackend& backend,
                                         std::string_view requested, ApiStyle style);

// What /v1/models lists: the served name, then each exact alias (prefix patterns are not names).
std::vector<std::string> listed_model_names(const ServerConfig& config, const serving::EngineBackend& backend);

// The model name responses carry: the request's, else the served one.
std::string response_model(const ServerConfig& config, const serving::EngineBackend& backend,
                           const std::string& requested);

}  // namespace ds4::http
