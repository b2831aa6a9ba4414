// DsmlSamplingState: where the model is in its output, for DSML-safe sampling.
//
// Fed the generated text (valid UTF-8, as it streams), it tells the server, for the next token,
// whether it is Free (the request's sampling), Structural (greedy) or Payload (the request's
// sampling inside argument values); allowed()/admits() give the continuations that forcing and
// the declared tool and parameter names leave open; inside_block() is true between the block's
// opening and closing tags. Why and the exact rules:
// docs/chat-format.md §sampling-a-call, §where-the-sampler-is.
#pragma once

#include <boost/json/object.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::protocol {

enum class SamplingZone { Free, Structural, Payload };
const char* sampling_zone_name(SamplingZone zone);

struct ForcedCall {
  bool required = false;  // some call must be made
  std::string function;   // when not empty: this one
};

// A tool as the output may call it: its name and its schema's parameter names (both as they
// appear in DSML attributes, escaped).
enum class ValueSpelling { Either, String, Json };  // string="true" / string="false" / both
struct DeclaredParameter {
  std::string name;
  ValueSpelling spelling = ValueSpelling::Either;
  // The property's schema (null: none); a string="false" value must match it, a string="true"
  // value one of its string enum values (json_constraint.hpp).
  std::shared_ptr<const boost::json::value> schema;
};
struct DeclaredTool {
  std::string name;
  std::vector<DeclaredParameter> parameters;
  std::vector<std::string> required;  // escaped names the invoke must give before it closes
};
// The request's tools (inner function objects, as ChatRequest::tools holds them); a tool without
// a string name is left out; parameters are the keys of its parameters.properties, spelled by
// their "type" (a single string: "string" or another; else Either), with their schemas; required
// is parameters.required (names that are properties).
std::vector<DeclaredTool> declared_tools(const std::vector<boost::json::object>& tools);

class DsmlSamplingState {
 public:
  // `tools` empty: names are not constrained.
  DsmlSamplingState(bool thinking_started, ForcedCall forced = {}, std::vector<DeclaredTool> tools = {});
  ~DsmlSamplingState();
  DsmlSamplingState(DsmlSamplingState&&) noexcept;
  DsmlSamplingState& operator=(DsmlSamplingState&&) noexcept;

  void feed(std::string_view text);
  SamplingZone zone() const;
  // The texts the next bytes must begin (see above), already-fed bytes removed; empty: free.
  std::vector<std::string> allowed() const;
  // Whether these bytes, fed one by one, keep to allowed() at every byte (a token that runs past
  // the end of one continuation into the next constrained value must fit that one too).
  bool admits(std::string_view bytes) const;
  // At the first byte of a tool or parameter name with more than one candidate: the candidates
  // (each a whole name and its closing quote), so the server can weigh each whole name by the
  // model instead of letting the first token decide; empty otherwise. prefer(i) keeps only
  // candidate i for the rest of this name.
  std::vector<std::string> name_choice() const;
  // The texts by which name_choice()'s candidates are weighed, in the same order: a parameter
  // name as it is; a tool name with the call's opening that follows it, up to its first declared
  // parameter's name (`X">` newline `<｜DSML｜parameter name="P"`), because the model says which
  // tool it means through the parameter it goes on to write as much as through the name (a
  // model that has not seen a tool's name still knows the parameter its reasoning names).
  std::vector<std::string> name_choice_texts() const;
  void prefer(size_t candidate);
  bool inside_block() const;
  // Inside a string="false" value, where every byte must keep the JSON a prefix of a value its
  // schema accepts (json_constraint.hpp): the sampler may only choose among tokens admits().
  bool value_constrained() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ds4::protocol
