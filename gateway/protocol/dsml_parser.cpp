// Streaming parser of sampled assistant text (see dsml_parser.hpp for the contract).
//
// Design: every byte fed is appended to `buf`, and `process()` consumes from its front for as
// long as the next decision can be made from the bytes present. A decision that depends on
// bytes not yet seen (a possible tag prefix, a possible entity, trailing whitespace that may
// turn out to precede a block) leaves those bytes in `buf` until more arrive or finish() forces
// the decision. Since every decision is a function of the complete text up to a point, the
// events do not depend on how the text was split into deltas; only the sizes of the text
// fragments do. All hold-back points are at ASCII bytes ('<', '&', whitespace), so complete
// UTF-8 in gives complete UTF-8 out.
#include "gateway/protocol/dsml_parser.hpp"

#include "gateway/protocol/dsml_format.hpp"
#include "gateway/protocol/json_scan.hpp"

namespace ds4::protocol {

namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr size_t kMaxTagBytes = 64 * 1024;  // a tag without '>' this long is not a tag
constexpr size_t kMaxEntityBytes = 6;       // "&quot;" / "&apos;"

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Length of the longest proper suffix of `s` that is a prefix of `tag`.
size_t partial_suffix(std::string_view s, std::string_view tag) {
  size_t max = std::min(s.size(), tag.size() - 1);
  for (size_t n = max; n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

// `s` is a (possibly empty) prefix of `tag`, so more bytes may still make it `tag`.
bool could_become(std::string_view s, std::string_view tag) { return s.size() < tag.size() && starts_with(tag, s); }

std::optional<std::string> attribute(std::string_view tag, std::string_view name) {
  std::string pattern = std::string(name) + "=\"";
  size_t p = tag.find(pattern);
  if (p == std::string_view::npos) return std::nullopt;
  p += pattern.size();
  size_t q = tag.find('"', p);
  if (q == std::string_view::npos) return std::nullopt;
  return dsml::unescape_entities(tag.substr(p, q - p));
}

struct StartMarker {
  std::string_view text;
  dsml::Style style;
};
constexpr StartMarker kStartMarkers[] = {
    {"<｜DSML｜tool_calls>", dsml::Style::Full},
    {"<DSML｜tool_calls>", dsml::Style::Short},
    {"<tool_calls>", dsml::Style::Plain},
};

enum class Phase { Start, Reasoning, Content, Block, AfterBlock, Passthrough };
enum class BlockPos { BetweenInvokes, InInvoke, StringValue, JsonValue, UndecidedValue, InNested };
enum class Step { Progress, NeedMore, Malformed };

}  // namespace

struct OutputParser::State {
  ToolCallIdGenerator make_id;
  bool tool_calls = true;  // false: no block is ever detected, content is all text
  Phase phase = Phase::Start;
  std::string buf;
  ParsedMessage msg;
  std::vector<Event>* events = nullptr;
  bool at_end = false;

  // Block state.
  dsml::Style style = dsml::Style::Full;
  BlockPos pos = BlockPos::BetweenInvokes;
  std::string block_raw;    // consumed block bytes
  size_t invoke_start = 0;  // offset of the current invoke in block_raw
  size_t call_index = 0;
  std::string args;  // arguments JSON of the current call so far
  bool first_member = true;
  bool nested = false;  // inside a loose nested parameter object
  bool nested_first = true;
  bool json_in_string = false;  // streaming minifier state
  bool json_escape = false;
  std::string json_value;  // current string="false" value, minified

  const dsml::StyleTags& t() const { return dsml::tags(style); }

  void reasoning(std::string_view text) {
    if (text.empty()) return;
    msg.reasoning->append(text);
    events->push_back(ReasoningDelta{std::string(text)});
  }
  void content(std::string_view text) {
    if (text.empty()) return;
    msg.content.append(text);
    events->push_back(ContentDelta{std::string(text)});
  }
  void fragment(std::string_view text) {
    if (text.empty()) return;
    args.append(text);
    events->push_back(ToolCallArgumentsDelta{call_index, std::string(text)});
  }
  void consume(size_t n) {
    block_raw.append(buf, 0, n);
    buf.erase(0, n);
  }

  void process() {
    for (;;) {
      switch (phase) {
        case Phase::Start:
          if (starts_with(buf, kThinkOpen)) {
            buf.erase(0, kThinkOpen.size());
            msg.reasoning.emplace();
            phase = Phase::Reasoning;
          } else if (could_become(buf, kThinkOpen) && !at_end) {
            return;
          } else {
            phase = Phase::Content;
          }
          break;
        case Phase::Reasoning: {
          size_t end = buf.find(kThinkClose);
          if (end != std::string::npos) {
            reasoning(std::string_view(buf).substr(0, end));
            buf.erase(0, end + kThinkClose.size());
            msg.thinking_closed = true;
            phase = Phase::Content;
            break;
          }
          size_t hold = at_end ? 0 : partial_suffix(buf, kThinkClose);
          reasoning(std::string_view(buf).substr(0, buf.size() - hold));
          buf.erase(0, buf.size() - hold);
          return;
        }
        case Phase::Content:
          if (!tool_calls) {
            phase = Phase::Passthrough;
            break;
          }
          if (!scan_content()) return;
          break;
        case Phase::Block: {
          Step s = block_step();
          if (s == Step::NeedMore) return;
          if (s == Step::Malformed) malformed();
          break;
        }
        case Phase::AfterBlock:
          buf.clear();  // the server stops decoding at the close tag; later text is not part of the turn
          return;
        case Phase::Passthrough:
          content(buf);
          buf.clear();
          return;
      }
    }
  }

  // Content phase. Returns true when it switched to the block phase.
  bool scan_content() {
    size_t best = std::string::npos;
    const StartMarker* marker = nullptr;
    for (const auto& m : kStartMarkers) {
      size_t p = buf.find(m.text);
      if (p < best) {
        best = p;
        marker = &m;
      }
    }
    if (marker) {
      size_t text_end = best;
      while (text_end > 0 && is_space(buf[text_end - 1])) --text_end;
      // The whitespace between content and block belongs to the block: it is protocol, not
      // content, and keeping all of it (not just a "\n\n") makes content + block exactly the
      // sampled bytes, so a replay matches the KV cache whatever whitespace the model chose.
      const size_t raw_start = text_end;
      content(std::string_view(buf).substr(0, text_end));
      buf.erase(0, raw_start);
      style = marker->style;
      phase = Phase::Block;
      msg.status = ToolCallsStatus::Unterminated;  // until the close tag arrives
      consume(best - raw_start + marker->text.size());
      pos = BlockPos::BetweenInvokes;
      return true;
    }
    if (at_end) {
      content(buf);
      buf.clear();
      return false;
    }
    size_t hold = 0;
    for (const auto& m : kStartMarkers) hold = std::max(hold, partial_suffix(buf, m.text));
    size_t emit = buf.size() - hold;
    while (emit > 0 && is_space(buf[emit - 1])) --emit;
    content(std::string_view(buf).substr(0, emit));
    buf.erase(0, emit);
    return false;
  }

  // Skips leading whitespace of buf into the block. False if buf is all whitespace.
  bool skip_ws() {
    size_t n = 0;
    while (n < buf.size() && is_space(buf[n])) ++n;
    consume(n);
    return !buf.empty();
  }

  // One step of block parsing.
  Step block_step() {
    switch (pos) {
      case BlockPos::BetweenInvokes: {
        if (!skip_ws()) return Step::NeedMore;
        if (starts_with(buf, t().tool_calls_close)) {
          consume(t().tool_calls_close.size());
          msg.dsml_block = block_raw;
          msg.status = ToolCallsStatus::Complete;
          events->push_back(ToolCallsDone{block_raw});
          phase = Phase::AfterBlock;
          return Step::Progress;
        }
        if (starts_with(buf, t().invoke_open)) {
          size_t gt = buf.find('>');
          if (gt == std::string::npos) return buf.size() > kMaxTagBytes ? Step::Malformed : Step::NeedMore;
          auto name = attribute(std::string_view(buf).substr(0, gt + 1), "name");
          if (!name) return Step::Malformed;
          invoke_start = block_raw.size();
          consume(gt + 1);
          ParsedToolCall call;
          call.id = make_id();
          call.name = *name;
          msg.calls.push_back(call);
          call_index = msg.calls.size() - 1;
          events->push_back(ToolCallBegin{call_index, call.id, call.name});
          args.clear();
          first_member = true;
          fragment("{");
          pos = BlockPos::InInvoke;
          return Step::Progress;
        }
        if (could_become(buf, t().tool_calls_close) || could_become(buf, t().invoke_open)) return Step::NeedMore;
        return Step::Malformed;
      }
      case BlockPos::InInvoke: {
        if (!skip_ws()) return Step::NeedMore;
        if (starts_with(buf, t().invoke_close)) {
          consume(t().invoke_close.size());
          fragment("}");
          ParsedToolCall& call = msg.calls[call_index];
          call.arguments_json = args;
          call.arguments_valid = json_scan::is_valid(args);
          call.exact_dsml = block_raw.substr(invoke_start);
          call.closed = true;
          events->push_back(ToolCallEnd{call_index, call.arguments_json, call.exact_dsml, call.arguments_valid});
          pos = BlockPos::BetweenInvokes;
          return Step::Progress;
        }
        if (starts_with(buf, t().param_open)) return open_parameter(false);
        if (could_become(buf, t().invoke_close) || could_become(buf, t().param_open)) return Step::NeedMore;
        return Step::Malformed;
      }
      case BlockPos::InNested: {
        if (!skip_ws()) return Step::NeedMore;
        if (starts_with(buf, t().param_open)) return open_parameter(true);
        if (could_become(buf, t().param_open) || could_become(buf, t().param_close)) return Step::NeedMore;
        fragment("}");
        nested = false;
        if (starts_with(buf, t().param_close)) consume(t().param_close.size());
        pos = BlockPos::InInvoke;
        return Step::Progress;
      }
      case BlockPos::UndecidedValue: {
        size_t n = 0;
        while (n < buf.size() && is_space(buf[n])) ++n;
        std::string_view rest = std::string_view(buf).substr(n);
        if (starts_with(rest, t().param_open)) {
          consume(n);
          fragment("{");
          nested = true;
          nested_first = true;
          pos = BlockPos::InNested;
          return Step::Progress;
        }
        if ((rest.empty() || could_become(rest, t().param_open)) && !at_end) return Step::NeedMore;
        fragment("\"");
        pos = BlockPos::StringValue;
        return Step::Progress;
      }
      case BlockPos::StringValue: return string_value();
      case BlockPos::JsonValue: return json_value_step();
    }
    return Step::Malformed;
  }

  Step open_parameter(bool in_nested) {
    size_t gt = buf.find('>');
    if (gt == std::string::npos) return buf.size() > kMaxTagBytes ? Step::Malformed : Step::NeedMore;
    std::string_view tag = std::string_view(buf).substr(0, gt + 1);
    auto name = attribute(tag, "name");
    if (!name) return Step::Malformed;
    auto is_string = attribute(tag, "string");
    consume(gt + 1);
    bool& first = in_nested ? nested_first : first_member;
    std::string key = first ? "" : ",";
    first = false;
    json_scan::append_quoted(key, *name);
    key += ":";
    fragment(key);
    if (!is_string && !in_nested) {
      pos = BlockPos::UndecidedValue;  // maybe a loose nested object
    } else if (!is_string || *is_string == "true") {
      fragment("\"");
      pos = BlockPos::StringValue;
    } else {
      json_value.clear();
      json_in_string = false;
      json_escape = false;
      pos = BlockPos::JsonValue;
    }
    return Step::Progress;
  }

  void after_value() { pos = nested ? BlockPos::InNested : BlockPos::InInvoke; }

  Step string_value() {
    size_t close = buf.find(t().param_close);
    size_t take = close;
    if (close == std::string::npos) {
      if (at_end) return Step::NeedMore;  // unterminated; finish() reports it
      size_t hold = partial_suffix(buf, t().param_close);
      size_t amp = buf.rfind('&');
      if (amp != std::string::npos && buf.size() - amp < kMaxEntityBytes) hold = std::max(hold, buf.size() - amp);
      take = buf.size() - hold;
    }
    std::string escaped;
    json_scan::append_quoted(escaped, dsml::unescape_entities(std::string_view(buf).substr(0, take)));
    fragment(std::string_view(escaped).substr(1, escaped.size() - 2));
    consume(take);
    if (close == std::string::npos) return Step::NeedMore;
    consume(t().param_close.size());
    fragment("\"");
    after_value();
    return Step::Progress;
  }

  Step json_value_step() {
    size_t close = buf.find(t().param_close);
    size_t take = close;
    if (close == std::string::npos) {
      if (at_end) return Step::NeedMore;
      take = buf.size() - partial_suffix(buf, t().param_close);
    }
    std::string min;
    for (size_t i = 0; i < take; ++i) {
      char c = buf[i];
      if (json_in_string) {
        min.push_back(c);
        if (json_escape) json_escape = false;
        else if (c == '\\') json_escape = true;
        else if (c == '"') json_in_string = false;
      } else if (c == '"') {
        json_in_string = true;
        min.push_back(c);
      } else if (!is_space(c)) {
        min.push_back(c);
      }
    }
    json_value += min;
    fragment(min);
    consume(take);
    if (close == std::string::npos) return Step::NeedMore;
    consume(t().param_close.size());
    if (json_value.empty()) fragment("null");  // ds4: an empty value is null
    after_value();
    return Step::Progress;
  }

  void malformed() {
    std::string raw = block_raw + buf;
    buf.clear();
    msg.calls.clear();
    msg.dsml_block.clear();
    msg.status = ToolCallsStatus::Malformed;
    events->push_back(ToolCallsError{ToolCallsStatus::Malformed, raw, "tool-call block is not well formed"});
    phase = Phase::Passthrough;
    content(raw);
  }
};

OutputParser::OutputParser(bool thinking_started, ToolCallIdGenerator make_id, bool tool_calls)
    : state_(std::make_unique<State>()) {
  state_->make_id = make_id ? std::move(make_id) : ToolCallIdGenerator(new_tool_call_id);
  state_->tool_calls = tool_calls;
  if (thinking_started) {
    state_->phase = Phase::Reasoning;
    state_->msg.reasoning.emplace();
  }
}

OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

std::vector<Event> OutputParser::feed(std::string_view text_delta) {
  std::vector<Event> events;
  if (state_->at_end) return events;
  state_->events = &events;
  state_->buf.append(text_delta);
  state_->process();
  state_->events = nullptr;
  return events;
}

std::vector<Event> OutputParser::finish() {
  std::vector<Event> events;
  if (state_->at_end) return events;
  state_->events = &events;
  state_->at_end = true;
  state_->process();
  if (state_->phase == Phase::Block) {
    State& s = *state_;
    std::string raw = s.block_raw + s.buf;
    s.buf.clear();
    s.msg.status = ToolCallsStatus::Unterminated;
    events.push_back(ToolCallsError{ToolCallsStatus::Unterminated, raw, "output ended inside a tool-call block"});
    s.phase = Phase::AfterBlock;
  }
  state_->events = nullptr;
  return events;
}

bool OutputParser::in_tool_calls() const { return state_->phase == Phase::Block; }
bool OutputParser::tool_calls_done() const {
  return state_->phase == Phase::AfterBlock && state_->msg.status == ToolCallsStatus::Complete;
}
const ParsedMessage& OutputParser::message() const { return state_->msg; }

}  // namespace ds4::protocol
