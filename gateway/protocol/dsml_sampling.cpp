// DSML-safe sampling state. See dsml_sampling.hpp.
#include "gateway/protocol/dsml_sampling.hpp"

#include "gateway/protocol/dsml_format.hpp"

namespace ds4::protocol {

namespace {

constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kBlockOpen = "<｜DSML｜tool_calls>";
constexpr std::string_view kBlockClose = "</｜DSML｜tool_calls>";
constexpr std::string_view kParamOpen = "<｜DSML｜parameter ";
constexpr std::string_view kParamClose = "</｜DSML｜parameter>";

enum class Phase {
  Reasoning,  // before </think>
  Content,    // free text; a block may open
  Block,      // inside the tool-call block, outside parameter values
  StringValue,
  JsonValue,
  Done,  // after the block closed
};

}  // namespace

const char* sampling_zone_name(SamplingZone zone) {
  switch (zone) {
    case SamplingZone::Free: return "free";
    case SamplingZone::Structural: return "structural";
    case SamplingZone::Payload: return "payload";
  }
  return "free";
}

struct DsmlSamplingState::State {
  Phase phase = Phase::Content;
  ForcedCall forced;
  std::string forced_text;  // the full text to force once content starts
  size_t forced_done = 0;   // bytes of forced_text already generated
  bool forcing = false;     // content started and the forced text is not complete yet
  std::string tail;         // recent bytes, for marker detection across feeds
  std::string tag;          // the parameter open tag being read (in Block)
  bool in_tag = false;
  // JSON value scanning
  bool json_in_string = false;
  bool json_escape = false;

  bool ends_with(std::string_view s) const { return tail.size() >= s.size() && tail.ends_with(s); }

  void enter_content() {
    phase = Phase::Content;
    forcing = forced.required;
    forced_done = 0;
  }

  void step(char c) {
    if (forcing) {
      if (forced_done < forced_text.size() && forced_text[forced_done] == c) ++forced_done;
      else forcing = false;  // something else got through (no token fitted): stop forcing
      if (forced_done == forced_text.size()) forcing = false;
    }
    tail.push_back(c);
    if (tail.size() > 64) tail.erase(0, tail.size() - 64);
    switch (phase) {
      case Phase::Reasoning:
        if (ends_with(kThinkClose)) enter_content();
        return;
      case Phase::Content:
        if (ends_with(kBlockOpen)) {
          phase = Phase::Block;
          in_tag = false;
        }
        return;
      case Phase::Block:
        if (ends_with(kBlockClose)) {
          phase = Phase::Done;
          forcing = false;
          return;
        }
        if (!in_tag && ends_with(kParamOpen)) {
          in_tag = true;
          tag.clear();
          return;
        }
        if (in_tag) {
          if (c == '>') {
            in_tag = false;
            bool is_string = tag.find("string=\"false\"") == std::string::npos;
            phase = is_string ? Phase::StringValue : Phase::JsonValue;
            json_in_string = json_escape = false;
          } else {
            tag.push_back(c);
          }
        }
        return;
      case Phase::StringValue:
        if (ends_with(kParamClose)) phase = Phase::Block;
        return;
      case Phase::JsonValue:
        if (json_in_string) {
          if (json_escape) json_escape = false;
          else if (c == '\\') json_escape = true;
          else if (c == '"') json_in_string = false;
          return;
        }
        if (c == '"') json_in_string = true;
        else if (ends_with(kParamClose)) phase = Phase::Block;
        return;
      case Phase::Done: return;
    }
  }

  // A possible closing tag has begun at the end of a value: "</" or longer prefix of it.
  bool closing_tag_started() const {
    for (size_t n = kParamClose.size() - 1; n >= 2; --n)
      if (ends_with(kParamClose.substr(0, n))) return true;
    return false;
  }
};

DsmlSamplingState::DsmlSamplingState(bool thinking_started, ForcedCall forced) : s_(std::make_unique<State>()) {
  s_->forced = std::move(forced);
  if (s_->forced.required || !s_->forced.function.empty()) {
    s_->forced.required = true;
    s_->forced_text = "\n\n";
    s_->forced_text += kBlockOpen;
    s_->forced_text += "\n<｜DSML｜invoke name=\"";
    if (!s_->forced.function.empty()) s_->forced_text += dsml::escape_attribute(s_->forced.function) + "\">\n";
  }
  if (thinking_started) s_->phase = Phase::Reasoning;
  else s_->enter_content();
}

DsmlSamplingState::~DsmlSamplingState() = default;
DsmlSamplingState::DsmlSamplingState(DsmlSamplingState&&) noexcept = default;
DsmlSamplingState& DsmlSamplingState::operator=(DsmlSamplingState&&) noexcept = default;

void DsmlSamplingState::feed(std::string_view text) {
  for (char c : text) s_->step(c);
}

SamplingZone DsmlSamplingState::zone() const {
  switch (s_->phase) {
    case Phase::Reasoning:
    case Phase::Content:
    case Phase::Done: return SamplingZone::Free;
    case Phase::Block: return SamplingZone::Structural;
    case Phase::StringValue: return s_->closing_tag_started() ? SamplingZone::Structural : SamplingZone::Payload;
    case Phase::JsonValue:
      if (s_->json_in_string) return SamplingZone::Payload;
      return SamplingZone::Structural;
  }
  return SamplingZone::Free;
}

std::string_view DsmlSamplingState::forced_text() const {
  if (!s_->forcing) return {};
  return std::string_view(s_->forced_text).substr(s_->forced_done);
}

bool DsmlSamplingState::forced_is_open_ended() const { return s_->forced.function.empty(); }

}  // namespace ds4::protocol
