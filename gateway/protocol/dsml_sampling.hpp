// DsmlSamplingState: where the model is in its output, for DSML-safe sampling.
//
// Why: the request's sampling settings (temperature, top_p, ...) are meant for what the model
// says, not for the syntax of a tool call. Sampled at temperature 1, a tag, an attribute, a JSON
// comma or a closing marker is occasionally the second-best token, and one wrong byte makes the
// whole call unparseable. Greedy everywhere is no fix either: long file bodies written greedily
// fall into repetition loops (ds4 22ca6ab). So, as the reference server does: protocol structure
// is greedy, payload (string parameter values, JSON string values) uses the request's sampling.
//
// The state is fed the generated text (valid UTF-8, as it streams) and answers, for the next
// token, one of:
//   Free        reasoning or content: the request's sampling
//   Structural  inside the tool-call block but not in a payload: greedy
//   Payload     a string parameter's value, or a JSON string inside a string="false" value:
//               the request's sampling, except once a possible closing tag has begun ("</"
//               inside a string value, as ds4 counts a >= 2-byte partial close tag), which is
//               structure again.
// DSML inside reasoning is not a call (ds4 037ee39): before "</think>" (when the prompt opened
// the think tag) everything is Free.
//
// Forcing (tool_choice required / any / a named function): once reasoning is over and until the
// block has opened, forced_text() is the text the output must continue with: the block opening
// "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"" followed, for a named function, by
// NAME "\">\n". The server lets through only tokens that are prefixes of it (or, for
// required/any, that reach past it into a function name). Empty when nothing is forced.
// Only the full DSML spelling is tracked (the one the tools prompt teaches); the parser still
// accepts the others.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ds4::protocol {

enum class SamplingZone { Free, Structural, Payload };
const char* sampling_zone_name(SamplingZone zone);

struct ForcedCall {
  bool required = false;  // some call must be made
  std::string function;   // when not empty: this one
};

class DsmlSamplingState {
 public:
  DsmlSamplingState(bool thinking_started, ForcedCall forced = {});
  ~DsmlSamplingState();
  DsmlSamplingState(DsmlSamplingState&&) noexcept;
  DsmlSamplingState& operator=(DsmlSamplingState&&) noexcept;

  void feed(std::string_view text);
  SamplingZone zone() const;
  // The text the output must continue with (already-fed forced bytes removed); empty: free.
  std::string_view forced_text() const;
  // true when the forced text may be followed by anything (required/any: a function name).
  bool forced_is_open_ended() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ds4::protocol
