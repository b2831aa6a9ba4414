#pragma once
// A vocabulary's fingerprint: FNV-1a 64 over every token's id, bytes and end-of-generation flag.
// A gateway tokenizes with its own copy of the tokenizer and the upstream decodes its ids, so the
// two must agree on every id; GET /engine/info reports it and the gateway refuses to start on a
// mismatch (docs/scale-out.md §engine-protocol).
#include <cstdint>

#include "gateway/serving/engine_backend.hpp"

namespace ds4::upstream {

uint64_t vocab_fingerprint(const serving::EngineBackend& backend);

}  // namespace ds4::upstream
