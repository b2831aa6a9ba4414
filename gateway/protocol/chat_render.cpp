// Chat rendering: ChatRequest -> DS4 prompt bytes, with exact DSML replay by tool-call id and
// the contract checks. The grammar and rules are documented in chat_render.hpp; the byte-level
// texts (tools block, Think Max prefix) are the reference server's, reproduced exactly because
// they are what the model was trained and prompted with.
#include "gateway/protocol/chat_render.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>

#include "gateway/protocol/dsml_format.hpp"
#include "gateway/protocol/json_scan.hpp"
#include "gateway/protocol/tool_call_id.hpp"

namespace ds4::protocol {

namespace {

constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
constexpr std::string_view kUser = "<｜User｜>";
constexpr std::string_view kAssistant = "<｜Assistant｜>";
constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

constexpr std::string_view kThinkMaxPrefix =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root "
    "cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial "
    "scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

constexpr std::string_view kToolsHead =
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user question. "
    "You can invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n"
    "<｜DSML｜tool_calls>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>\n\n"
    "String parameters should be specified as raw text and set `string=\"true\"`. "
    "Preserve characters such as `>`, `&`, and `&&` exactly; never replace normal string characters with XML "
    "or HTML entity escapes. "
    "Only if a string value itself contains the exact closing parameter tag `</｜DSML｜parameter>`, write that "
    "tag as `&lt;/｜DSML｜parameter>` inside the value. "
    "For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set "
    "`string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
    "<think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n";

constexpr std::string_view kToolsTail =
    "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls. "
    "Use the exact parameter names from the schemas.";

bool is_system(Role r) { return r == Role::System || r == Role::Developer; }
bool is_user_like(Role r) { return r == Role::User || r == Role::Tool; }

// Same JSON value: numbers by value (10 == 10.0 == 1e1), objects regardless of key order.
bool same_json(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_double() && !b.is_double()) return a == b;
    return a.to_number<double>() == b.to_number<double>();
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const auto& x = a.get_object();
    const auto& y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& [key, value] : x) {
      const auto* other = y.if_contains(key);
      if (!other || !same_json(value, *other)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const auto& x = a.get_array();
    const auto& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same_json(x[i], y[i])) return false;
    return true;
  }
  return a == b;
}

// Did the client send back the arguments we reported? Raw equality, else the same JSON value.
bool same_arguments(std::string_view client, std::string_view ours) {
  if (client == ours) return true;
  boost::system::error_code ec1, ec2;
  auto a = boost::json::parse(client, ec1);
  auto b = boost::json::parse(ours, ec2);
  return !ec1 && !ec2 && same_json(a, b);
}

class Renderer {
 public:
  Renderer(const ChatRequest& req, const ContractStore* store, ContractMode mode, const RenderOptions& opt)
      : req_(req), store_(store), mode_(mode), opt_(opt) {}

  RenderResult run() {
    r_.thinking = effective_thinking(req_.thinking, opt_.context_length);
    r_.tools_active = req_.tools_active();
    think_ = r_.thinking != Thinking::Off;
    tool_context_ = r_.tools_active;
    for (size_t i = 0; i < req_.messages.size(); ++i) {
      const Message& m = req_.messages[i];
      if ((m.role == Role::Assistant && !m.tool_calls.empty()) || m.role == Role::Tool) tool_context_ = true;
      if (is_user_like(m.role)) last_user_ = static_cast<long>(i);
    }

    out().append(kBos);
    if (r_.thinking == Thinking::Max) out().append(kThinkMaxPrefix);
    render_system();

    for (size_t i = 0; i < req_.messages.size(); ++i) {
      const Message& m = req_.messages[i];
      if (is_system(m.role)) continue;
      if (is_user_like(m.role) && !pending_assistant_) segment_start_ = out().size();
      if (m.role == Role::User) {
        out().append(kUser);
        client(m.content);
        pending_assistant_ = true;
        pending_tool_result_ = false;
      } else if (m.role == Role::Tool) {
        if (!pending_tool_result_) out().append(kUser);
        out().append("<tool_result>");
        client(dsml::escape_tool_result(m.content));
        out().append("</tool_result>");
        pending_assistant_ = true;
        pending_tool_result_ = true;
      } else {
        render_assistant(i, m);
        pending_assistant_ = false;
        pending_tool_result_ = false;
      }
    }
    if (pending_assistant_) {
      r_.turn_anchor = fnv1a64(std::string_view(out()).substr(segment_start_));
      out().append(kAssistant);
      out().append(think_ ? kThinkOpen : kThinkClose);
    }
    merge_spans();
    return std::move(r_);
  }

 private:
  std::string& out() { return r_.text; }

  // Text the client sent: counted as client text and encoded as plain text.
  void client(std::string_view text) {
    size_t begin = out().size();
    out().append(text);
    if (out().size() == begin) return;
    r_.client_spans.emplace_back(begin, out().size());
    r_.plain_spans.emplace_back(begin, out().size());
  }
  // The model's own earlier output from the contract store: counted as client text (it stands
  // for what the client would have sent back) but tokenized as it was generated.
  void stored(std::string_view text) {
    size_t begin = out().size();
    out().append(text);
    if (out().size() > begin) r_.client_spans.emplace_back(begin, out().size());
  }

  void render_system() {
    const size_t start = out().size();
    if (r_.tools_active) {
      out().append(kToolsHead);
      for (size_t i = 0; i < req_.tools.size(); ++i) {
        if (i) out().push_back('\n');
        client(json_scan::compact_text(req_.tools[i]));
      }
      out().append(kToolsTail);
    }
    for (const Message& m : req_.messages) {
      if (!is_system(m.role)) continue;
      if (out().size() > start) out().append("\n\n");
      client(m.content);
    }
  }

  void violation(size_t index, ViolationKind kind, std::string detail, std::string hint) {
    if (mode_ == ContractMode::Off) return;
    r_.violations.push_back({index, kind, std::move(detail), std::move(hint)});
  }

  void render_assistant(size_t index, const Message& m) {
    // 1. Which stored turn (if any) is this? Tool-call ids first.
    std::optional<TurnContract> turn;
    bool all_known = !m.tool_calls.empty();
    bool same_turn = true;
    bool arguments_match = true;
    for (const ToolCall& call : m.tool_calls) {
      std::optional<TurnContract> found = store_ ? store_->find_by_tool_call_id(call.id) : std::nullopt;
      if (!found) {
        all_known = false;
        if (looks_like_our_tool_call_id(call.id))
          violation(index, ViolationKind::UnknownToolCallId,
                    "tool call id '" + call.id + "' has the server's format but is not in its contract store",
                    "the server no longer remembers this turn (evicted, or restarted without its checkpoint); "
                    "it was rendered from the client's arguments. Resend the conversation unchanged "
                    "after the server returns it, or use contract mode 'warn' to accept canonical rendering");
        continue;
      }
      if (!turn) turn = found;
      else if (turn->dsml_block != found->dsml_block || turn->fingerprint != found->fingerprint) same_turn = false;
      auto stored = std::find_if(found->calls.begin(), found->calls.end(),
                                 [&](const CallContract& c) { return c.id == call.id; });
      if (stored == found->calls.end()) continue;
      if (stored->name != call.name || !same_arguments(call.arguments, stored->arguments_json)) {
        arguments_match = false;
        violation(index, ViolationKind::ArgumentsChanged,
                  "tool call '" + call.id + "' was sent back as " + call.name + "(" + call.arguments +
                      ") but the server returned " + stored->name + "(" + stored->arguments_json + ")",
                  "send tool_calls[].function.name and .arguments back exactly as the server returned them "
                  "(key order and whitespace may differ, values may not)");
      }
    }
    const bool replay = opt_.exact_replay && all_known && same_turn && arguments_match && turn &&
                        turn->calls.size() == m.tool_calls.size() && !turn->dsml_block.empty();

    uint64_t anchor = 0;
    if (pending_assistant_) anchor = fnv1a64(std::string_view(out()).substr(segment_start_));
    if (!turn && pending_assistant_ && store_ && mode_ != ContractMode::Off)
      turn = store_->find_by_fingerprint(turn_fingerprint(anchor, m.content));

    // 2. Think part, with the reasoning contract.
    if (pending_assistant_) {
      out().append(kAssistant);
      const bool template_keeps = think_ && (tool_context_ || static_cast<long>(index) > last_user_);
      // Warn mode, tool-less thinking chat: the template drops this old reasoning, but the
      // turn is ours and the KV cache holds it as generated; restoring it keeps the prompt
      // a prefix of the cache (the model saw that reasoning when it answered anyway).
      const bool restore_dropped = !template_keeps && think_ && mode_ == ContractMode::Warn && turn &&
                                   turn->reasoning && !turn->reasoning->empty();
      if (restore_dropped) {
        out().append(kThinkOpen);
        stored(*turn->reasoning);
        out().append(kThinkClose);
        ++r_.repaired_reasoning;
      } else if (template_keeps) {
        std::string_view reasoning = m.reasoning ? std::string_view(*m.reasoning) : std::string_view{};
        bool repaired = false;
        if (mode_ != ContractMode::Off && turn && turn->reasoning && !turn->reasoning->empty()) {
          if (!m.reasoning || m.reasoning->empty()) {
            violation(index, ViolationKind::ReasoningMissing,
                      "assistant message was generated with " + std::to_string(turn->reasoning->size()) +
                          " bytes of reasoning but was sent back without it",
                      "send the assistant message's reasoning back unchanged in 'reasoning_content' "
                      "(as returned in message.reasoning_content or the streamed "
                      "delta.reasoning_content)");
            reasoning = *turn->reasoning;
            repaired = true;
            ++r_.repaired_reasoning;
          } else if (*m.reasoning != *turn->reasoning) {
            violation(index, ViolationKind::ReasoningChanged,
                      "reasoning_content differs from the generated reasoning (" + std::to_string(m.reasoning->size()) +
                          " bytes sent, " + std::to_string(turn->reasoning->size()) + " generated)",
                      "send reasoning_content exactly as the server returned it; do not trim, "
                      "summarize or re-encode it");
          }
        }
        out().append(kThinkOpen);
        if (repaired) stored(reasoning);
        else client(reasoning);
        out().append(kThinkClose);
      } else {
        out().append(kThinkClose);
      }
    }

    // 3. Content, tool calls, end of turn.
    client(m.content);
    if (!m.tool_calls.empty()) {
      if (replay) {
        size_t base = out().size();
        out().append(turn->dsml_block);
        for (auto [b, e] : dsml::parameter_value_spans(turn->dsml_block))
          r_.client_spans.emplace_back(base + b, base + e);
        ++r_.replayed_blocks;
      } else {
        const size_t values = r_.client_spans.size();
        dsml::render_tool_calls(m.tool_calls, out(), &r_.client_spans, &r_.plain_spans);
        r_.plain_spans.insert(r_.plain_spans.end(), r_.client_spans.begin() + static_cast<long>(values),
                              r_.client_spans.end());
        ++r_.canonical_blocks;
      }
    }
    out().append(kEos);
  }

  void merge_spans() {
    for (auto* spans : {&r_.client_spans, &r_.plain_spans}) {
      auto& s = *spans;
      std::sort(s.begin(), s.end());
      std::vector<std::pair<size_t, size_t>> merged;
      for (auto span : s) {
        if (span.first >= span.second) continue;
        if (!merged.empty() && span.first <= merged.back().second)
          merged.back().second = std::max(merged.back().second, span.second);
        else merged.push_back(span);
      }
      s = std::move(merged);
    }
  }

  const ChatRequest& req_;
  const ContractStore* store_;
  ContractMode mode_;
  RenderOptions opt_;
  RenderResult r_;
  bool think_ = true;
  bool tool_context_ = false;
  long last_user_ = -1;
  bool pending_assistant_ = false;
  bool pending_tool_result_ = false;
  size_t segment_start_ = 0;
};

}  // namespace

Thinking effective_thinking(Thinking requested, size_t context_length) {
  if (requested == Thinking::Max && context_length < kThinkMaxMinContext) return Thinking::High;
  return requested;
}

RenderResult render_chat(const ChatRequest& request, const ContractStore* store, ContractMode mode,
                         const RenderOptions& options) {
  return Renderer(request, store, mode, options).run();
}

CompletionFrame completion_frame(const CompletionRequest& request, const RenderOptions& options) {
  CompletionFrame frame;
  frame.thinking = effective_thinking(request.thinking, options.context_length);
  if (request.raw) return frame;
  frame.head.append(kBos);
  if (frame.thinking == Thinking::Max) frame.head.append(kThinkMaxPrefix);
  frame.head.append("You are a helpful assistant");
  frame.head.append(kUser);
  frame.tail.append(kAssistant);
  frame.tail.append(frame.thinking != Thinking::Off ? kThinkOpen : kThinkClose);
  return frame;
}

}  // namespace ds4::protocol
