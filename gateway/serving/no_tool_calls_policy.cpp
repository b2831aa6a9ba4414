// The no-tool-calls token policy. See no_tool_calls_policy.hpp.
#include "gateway/serving/no_tool_calls_policy.hpp"

namespace ds4::serving {

namespace {
constexpr std::string_view kMarker = "DSML｜";
constexpr std::string_view kThinkClose = "</think>";
constexpr size_t kTailBytes = 16;  // longer than either marker
}  // namespace

bool NoToolCallsPolicy::feed(bool& reasoning, std::string& tail, std::string_view bytes) {
  bool opened = false;
  for (char c : bytes) {
    tail.push_back(c);
    if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
    if (reasoning) {
      if (tail.ends_with(kThinkClose)) {
        reasoning = false;
        tail.clear();
      }
    } else if (tail.ends_with(kMarker)) {
      opened = true;
    }
  }
  return opened;
}

bool NoToolCallsPolicy::refuses(std::string_view bytes) const {
  bool reasoning = reasoning_;
  std::string tail = tail_;
  return feed(reasoning, tail, bytes);
}

}  // namespace ds4::serving
