// Agent-quality evaluation; see agent_eval.hpp.
#include "ds4ctl/eval_agent/agent_eval.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <stdexcept>

#include "engine/sampler/sampler.hpp"
#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/protocol/utf8_assembler.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/turn_decoder.hpp"

namespace ds4::agent_eval {
namespace json = boost::json;
namespace {

// JSON values equal as a client would see them: numbers by value, objects by key set.
bool same_value(const json::value& a, const json::value& b) {
  if (a.is_number() && b.is_number()) return a.to_number<double>() == b.to_number<double>();
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const auto &x = a.get_object(), &y = b.get_object();
    if (x.size() != y.size()) return false;
    for (const auto& [k, v] : x) {
      const json::value* o = y.if_contains(k);
      if (!o || !same_value(v, *o)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const auto &x = a.get_array(), &y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same_value(x[i], y[i])) return false;
    return true;
  }
  return a == b;
}

// Scores one parsed reply; fills r.detail.
bool score(const std::string& kind, const json::object& expect, const protocol::ParsedMessage& m, CaseResult& r) {
  using protocol::ToolCallsStatus;
  if (kind == "plain") {
    r.detail = m.status == ToolCallsStatus::None ? "no tool call" : "unexpected tool-call block";
    return m.status == ToolCallsStatus::None;
  }
  if (kind == "answer") {
    if (m.status != ToolCallsStatus::None) {
      r.detail = "called a tool instead of answering";
      return false;
    }
    for (const json::value& f : expect.at("facts").as_array()) {
      const std::string fact(f.as_string());
      if (m.content.find(fact) == std::string::npos) {
        r.detail = "answer lacks '" + fact + "'";
        return false;
      }
    }
    r.detail = "answer uses the result";
    return true;
  }
  if (m.status != ToolCallsStatus::Complete || m.calls.empty()) {
    r.detail = m.status == ToolCallsStatus::None ? "no tool call" : "malformed or unterminated DSML block";
    return false;
  }
  const protocol::ParsedToolCall& c = m.calls.front();
  r.detail = c.name + "(" + c.arguments_json + ")";
  if (c.name != expect.at("name").as_string()) return false;
  boost::system::error_code ec;
  json::value args = json::parse(c.arguments_json, ec);
  return !ec && c.arguments_valid && same_value(args, expect.at("arguments"));
}

}  // namespace

std::vector<Case> load_cases(const std::filesystem::path& jsonl) {
  std::ifstream in(jsonl);
  if (!in) throw std::runtime_error("cannot open " + jsonl.string());
  std::vector<Case> cases;
  std::string line;
  for (size_t lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty()) continue;
    try {
      const json::object o = json::parse(line).as_object();
      Case c;
      c.kind = std::string(o.at("kind").as_string());
      if (c.kind != "call" && c.kind != "answer" && c.kind != "plain")
        throw std::runtime_error("unknown kind " + c.kind);
      c.heldout = o.at("heldout").as_bool();
      c.request_json = json::serialize(o.at("request"));
      c.expect_json = json::serialize(o.at("expect"));
      if (const json::value* ids = o.if_contains("prompt_ids"))
        for (const json::value& v : ids->as_array()) c.python_ids.push_back(static_cast<int32_t>(v.as_int64()));
      cases.push_back(std::move(c));
    } catch (const std::exception& e) {
      throw std::runtime_error(jsonl.string() + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return cases;
}

Reply generate_reply(const std::shared_ptr<serving::Ds4Backend>& backend, serving::EngineSequence& seq,
                     const std::string& request_json, size_t max_new_tokens, Decoding decoding,
                     const sampler::SamplerConfig& sampling, Speculation speculation) {
  Reply out;
  const protocol::ChatRequest req = protocol::parse_chat_request(json::parse(request_json));
  const protocol::RenderResult rendered = protocol::render_chat(req, nullptr, protocol::ContractMode::Off);
  out.prompt = rendered.text;
  out.prompt_ids = backend->tokenizer().encode(rendered.text);
  // As the server sets it up for the request (tool_choice, declared tools); none when Free.
  const std::shared_ptr<serving::DsmlTokenPolicy> policy =
      decoding == Decoding::Served
          ? serving::chat_tool_policy(backend, req, rendered.tools_active, rendered.text.ends_with("<think>"))
          : nullptr;
  if (out.prompt_ids.size() + max_new_tokens > seq.capacity())
    throw std::runtime_error("case prompt of " + std::to_string(out.prompt_ids.size()) +
                             " tokens does not fit the context");
  seq.clear();
  seq.append(out.prompt_ids);
  sampler::Sampler sampler(sampling);
  serving::TurnDecoder decoder(
      seq, *backend, policy.get(), [&](std::span<const float> l) { return sampler.sample(l); }, speculation.drafter,
      speculation.k, out.prompt_ids);
  protocol::OutputParser parser(rendered.thinking != protocol::Thinking::Off);
  protocol::Utf8Assembler utf8;
  for (size_t n = 0; n < max_new_tokens; ++n) {
    const serving::DecodedToken d = decoder.next();
    ++out.chosen;
    if (d.ends) break;
    out.tokens.push_back(d.token);
    const std::string text = utf8.push(d.bytes);
    out.output += text;
    parser.feed(text);
    // Where a tool-call block closes the chat endpoint stops the turn (turn_stream.cpp).
    if (parser.tool_calls_done() || n + 1 == max_new_tokens) break;
    decoder.feed(d.token, max_new_tokens - n - 1);
  }
  decoder.finish();
  const std::string tail = utf8.flush();
  out.output += tail;
  parser.feed(tail);
  parser.finish();
  out.message = parser.message();
  out.weighing_decodes = decoder.weighing_decodes();
  out.speculation = decoder.speculation();
  return out;
}

Report evaluate(const std::shared_ptr<serving::Ds4Backend>& backend, const std::vector<Case>& cases,
                size_t max_new_tokens, Decoding decoding, Speculation speculation) {
  // The server's engine face: its sequence (with the rollback that weighing names needs).
  const std::unique_ptr<serving::EngineSequence> seq = backend->new_sequence();
  sampler::SamplerConfig greedy;  // ties go to the lowest id
  greedy.temperature = 0;
  Report rep;
  for (const Case& c : cases) {
    CaseResult r;
    Reply reply = generate_reply(backend, *seq, c.request_json, max_new_tokens, decoding, greedy, speculation);
    rep.speculation.drafted += reply.speculation.drafted;
    rep.speculation.accepted += reply.speculation.accepted;
    r.prompt = std::move(reply.prompt);
    if (!c.python_ids.empty() && c.python_ids != reply.prompt_ids) {
      r.ids_match = false;
      ++rep.ids_mismatch;
    }
    rep.generated_tokens += reply.chosen;
    rep.weighing_decodes += reply.weighing_decodes;
    r.output = std::move(reply.output);
    const protocol::ParsedMessage& m = reply.message;
    const json::object expect = json::parse(c.expect_json).as_object();
    r.pass = score(c.kind, expect, m, r);
    if (c.kind == "call") {
      rep.well_formed[c.heldout ? 1 : 0].n++;
      if (m.status == protocol::ToolCallsStatus::Complete && !m.calls.empty())
        rep.well_formed[c.heldout ? 1 : 0].pass++;
    }
    Score* s = c.kind == "call" ? rep.call : c.kind == "answer" ? rep.answer : rep.plain;
    s[c.heldout ? 1 : 0].n++;
    if (r.pass) s[c.heldout ? 1 : 0].pass++;
    rep.results.push_back(std::move(r));
  }
  return rep;
}

}  // namespace ds4::agent_eval
