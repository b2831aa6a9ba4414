#pragma once
// NoToolCallsPolicy: the token policy of a turn that may not call tools (no tools declared, or
// tool_choice "none"): the output can never open a tool-call block.
//
// Why: a client without tools cannot run a call, and the model (trained on agent traffic) still
// writes DSML now and then; a block it opens is either a call to a tool nobody declared or, cut
// or malformed, a failed turn. So outside reasoning no token may bring the DSML marker "DSML｜"
// into the output (it opens both "<｜DSML｜tool_calls>" and "<DSML｜tool_calls>"); the request's
// sampler chooses among the rest. Reasoning is left alone (DSML there is never a call). The
// output parser of such a turn does not look for blocks at all (OutputParser's tool_calls), so
// any DSML-like text that is left ("<tool_calls>") is plain content.
// docs/chat-format.md §no-tools-no-calls.
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gateway/serving/generation.hpp"

namespace ds4::serving {

class NoToolCallsPolicy final : public TokenPolicy {
 public:
  // `thinking_started`: the prompt ends with "<think>" (the output starts in reasoning).
  explicit NoToolCallsPolicy(bool thinking_started) : reasoning_(thinking_started) {
    spec = thinking_started ? R"({"kind":"no_tools","thinking_started":true})"
                            : R"({"kind":"no_tools","thinking_started":false})";
  }

  std::optional<Token> choose(std::span<const float>) override { return std::nullopt; }
  void accepted(Token, std::string_view bytes) override { feed(reasoning_, tail_, bytes); }
  bool refuses(std::string_view bytes) const override;

 private:
  // Follows the output; true when `bytes` bring the marker into content.
  static bool feed(bool& reasoning, std::string& tail, std::string_view bytes);

  bool reasoning_;
  std::string tail_;  // the last bytes of the output, for a marker split across tokens
};

}  // namespace ds4::serving
