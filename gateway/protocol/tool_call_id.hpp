// Tool-call ids: "call_" + 32 lowercase hex digits from 16 bytes of OS randomness (getrandom).
// The gateway issues every id it reports, which is what lets the contract store recognise a
// replayed turn by id with certainty.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ds4::protocol {

std::string new_tool_call_id();
bool looks_like_our_tool_call_id(std::string_view id);  // call_ + exactly 32 lowercase hex

using ToolCallIdGenerator = std::function<std::string()>;

}  // namespace ds4::protocol
