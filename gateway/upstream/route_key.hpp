#pragma once
// Which upstream a job goes to (docs/scale-out.md §routing). A session's turns must land on the
// node that holds its prefix, so every job gets a route key: the client's session hint
// (X-Claude-Code-Session-Id, prompt_cache_key, metadata.user_id, as GenerationJob::session
// keeps it), else a hash of the prompt up to its first user turn (the system prompt and tools,
// which every turn of a conversation repeats). The key is sent upstream (header X-DS4-Route-Key)
// so a balancer in front of replicas can hash on the same thing.
// Nodes are ranked by rendezvous (highest random weight) hashing on the key: the first healthy
// one takes the job, the next ones are its failover order, and a node that leaves or joins moves
// only the keys it wins.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/serving/generation.hpp"

namespace ds4::upstream {

inline constexpr std::string_view kRouteKeyHeader = "X-DS4-Route-Key";

// `user_token`: the tokenizer's id of "<｜User｜>" (-1: none; then the first 64 tokens are hashed).
std::string route_key(const serving::GenerationJob& job, serving::Token user_token);

// Indices of `nodes`, best first, for `key`.
std::vector<size_t> rendezvous_order(std::string_view key, std::span<const std::string> nodes);

}  // namespace ds4::upstream
