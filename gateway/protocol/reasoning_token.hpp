// The Responses form of the reasoning contract: a reasoning item's `encrypted_content`.
//
// Codex runs with store:false and include:["reasoning.encrypted_content"]: the server keeps no
// conversation, the client keeps the items and sends them back. To keep the echo exact, the
// reasoning item we return carries our exact sampled reasoning bytes in encrypted_content as
// "ds4d.r1." + base64(bytes); the client returns it untouched and the renderer gets the exact
// bytes back (no summarising, trimming or re-encoding can break the prefix). It is not secret
// (the same text is in the summary); "encrypted" is the API's name for opaque.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ds4::protocol {

std::string encode_reasoning_token(std::string_view reasoning);
// The reasoning bytes, or nullopt when the text is not a token of ours (another server's, or
// damaged).
std::optional<std::string> decode_reasoning_token(std::string_view token);

}  // namespace ds4::protocol
