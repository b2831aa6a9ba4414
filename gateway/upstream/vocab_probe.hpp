#pragma once
// The vocabulary check of vLLM and SGLang upstreams (docs/scale-out.md §vocabulary-probe). Their
// vocabulary has no fingerprint, so the gateway sends a fixed probe text (words, code, CJK, emoji,
// whitespace runs and the DS4/DSML markers) to their POST /tokenize and compares the ids with its
// own tokenizer's. A mismatch names the first differing position, both ids and the local token's
// text; an upstream without /tokenize (404, older SGLang) cannot be checked, which is said, not
// fatal.
#include <optional>
#include <string>
#include <string_view>

#include "gateway/serving/engine_backend.hpp"

namespace ds4::upstream {

// The text sent to /tokenize.
std::string_view vocab_probe_text();

// The JSON body of POST /tokenize for the served model `model`.
std::string vocab_probe_request(std::string_view model);

// Compares a /tokenize answer ({"tokens":[ids],...}) with `local`'s encoding of the probe text.
// Returns nothing when they agree, else why they differ. Throws std::runtime_error for a
// malformed answer.
std::optional<std::string> vocab_probe_mismatch(std::string_view answer, const serving::EngineBackend& local);

}  // namespace ds4::upstream
