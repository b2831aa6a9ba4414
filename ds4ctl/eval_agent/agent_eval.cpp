// Agent-quality evaluation; see agent_eval.hpp.
#include "ds4ctl/eval_agent/agent_eval.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <stdexcept>

#include "engine/model/model.hpp"
#include "engine/sampler/sampler.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/dsml_parser.hpp"
#include "gateway/protocol/utf8_assembler.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/token_choice.hpp"

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

Report evaluate(const std::shared_ptr<Model>& model, const std::vector<Case>& cases, size_t max_new_tokens,
                Decoding decoding) {
  // The server's engine face: its token table for the token rules, its sequence (with the
  // rollback that weighing names needs) for decoding.
  const auto backend = std::make_shared<serving::Ds4Backend>(model, tokenizer::Tokenizer::from_gguf(model->gguf()), "");
  const std::unique_ptr<serving::EngineSequence> seq = backend->new_sequence();
  std::vector<float> held;
  const tokenizer::Tokenizer& tok = backend->tokenizer();
  // Greedy; ties go to the lowest id.
  const serving::SampleFn greedy = [](std::span<const float> l) { return sampler::argmax(l); };
  Report rep;
  for (const Case& c : cases) {
    CaseResult r;
    const protocol::ChatRequest req = protocol::parse_chat_request(json::parse(c.request_json));
    const protocol::RenderResult rendered = protocol::render_chat(req, nullptr, protocol::ContractMode::Off);
    r.prompt = rendered.text;
    const std::vector<int32_t> ids = tok.encode(rendered.text);
    if (!c.python_ids.empty() && c.python_ids != ids) {
      r.ids_match = false;
      ++rep.ids_mismatch;
    }
    // As the server sets it up for the request (tool_choice, declared tools); none when --free.
    const std::shared_ptr<serving::DsmlTokenPolicy> policy =
        decoding == Decoding::Served
            ? serving::chat_tool_policy(backend, req, rendered.tools_active, rendered.text.ends_with("<think>"))
            : nullptr;
    if (ids.size() + max_new_tokens > seq->capacity())
      throw std::runtime_error("case prompt of " + std::to_string(ids.size()) + " tokens does not fit the context");
    seq->clear();
    seq->append(ids);
    protocol::OutputParser parser(rendered.thinking != protocol::Thinking::Off);
    protocol::Utf8Assembler utf8;
    for (size_t n = 0; n < max_new_tokens; ++n) {
      const int32_t t = choose_token(policy.get(), *seq, *backend, greedy, held, &rep.weighing_decodes);
      ++rep.generated_tokens;
      if (t == tok.eos()) break;
      const std::string bytes = tok.token_bytes(t);
      if (policy) policy->accepted(t, bytes);
      const std::string text = utf8.push(bytes);
      r.output += text;
      parser.feed(text);
      if (parser.tool_calls_done() || n + 1 == max_new_tokens) break;
      seq->append(std::span<const int32_t>(&t, 1));
    }
    const std::string tail = utf8.flush();
    r.output += tail;
    parser.feed(tail);
    parser.finish();
    const json::object expect = json::parse(c.expect_json).as_object();
    r.pass = score(c.kind, expect, parser.message(), r);
    if (c.kind == "call") {
      rep.well_formed[c.heldout ? 1 : 0].n++;
      const auto& m = parser.message();
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
