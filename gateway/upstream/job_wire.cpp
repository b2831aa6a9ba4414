// The engine protocol's JSON. See job_wire.hpp.
#include "gateway/upstream/job_wire.hpp"

#include <stdexcept>

#include "gateway/protocol/dsml_sampling.hpp"
#include "gateway/protocol/json_constraint.hpp"
#include "gateway/protocol/request_error.hpp"
#include "gateway/serving/dsml_token_policy.hpp"
#include "gateway/serving/json_format_policy.hpp"
#include "gateway/serving/no_tool_calls_policy.hpp"

namespace ds4::upstream {
namespace json = boost::json;
using protocol::RequestError;

namespace {

const json::value* field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

double number(const json::object& o, std::string_view key, double fallback) {
  const json::value* v = field(o, key);
  if (!v) return fallback;
  if (!v->is_number()) throw RequestError(std::string(key), std::string(key) + " must be a number");
  return v->to_number<double>();
}

uint64_t count(const json::object& o, std::string_view key, uint64_t fallback) {
  const json::value* v = field(o, key);
  if (!v) return fallback;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<uint64_t>(v->get_int64());
  throw RequestError(std::string(key), std::string(key) + " must be a non-negative integer");
}

bool flag(const json::object& o, std::string_view key, bool fallback) {
  const json::value* v = field(o, key);
  if (!v) return fallback;
  if (!v->is_bool()) throw RequestError(std::string(key), std::string(key) + " must be a boolean");
  return v->get_bool();
}

std::string text(const json::object& o, std::string_view key) {
  const json::value* v = field(o, key);
  if (!v) return {};
  if (!v->is_string()) throw RequestError(std::string(key), std::string(key) + " must be a string");
  return std::string(v->get_string());
}

std::vector<serving::Token> token_ids(const json::value& v, std::string_view param, size_t vocab) {
  if (!v.is_array()) throw RequestError(std::string(param), std::string(param) + " must be an array of token ids");
  std::vector<serving::Token> out;
  out.reserve(v.get_array().size());
  for (size_t i = 0; i < v.get_array().size(); ++i) {
    const json::value& e = v.get_array()[i];
    const std::string p = std::string(param) + "[" + std::to_string(i) + "]";
    if (!e.is_int64() || e.get_int64() < 0 || (vocab && static_cast<uint64_t>(e.get_int64()) >= vocab))
      throw RequestError(p, p + " must be a token id in 0.." + std::to_string(vocab ? vocab - 1 : 0));
    out.push_back(static_cast<serving::Token>(e.get_int64()));
  }
  return out;
}

json::array ids(std::span<const serving::Token> tokens) {
  json::array a;
  a.reserve(tokens.size());
  for (serving::Token t : tokens) a.push_back(t);
  return a;
}

}  // namespace

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string from_hex(std::string_view hex) {
  if (hex.size() % 2) throw std::invalid_argument("hex text of odd length " + std::to_string(hex.size()));
  auto nibble = [&](char c, size_t at) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument("not a hex digit at " + std::to_string(at));
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<char>(nibble(hex[2 * i], 2 * i) * 16 + nibble(hex[2 * i + 1], 2 * i + 1));
  return out;
}

std::optional<serving::FinishReason> finish_reason_from_name(std::string_view name) {
  using serving::FinishReason;
  for (FinishReason r :
       {FinishReason::Eos, FinishReason::StopSequence, FinishReason::ConsumerStop, FinishReason::MaxTokens,
        FinishReason::ContextFull, FinishReason::Cancelled, FinishReason::Timeout, FinishReason::Error})
    if (name == serving::finish_reason_name(r)) return r;
  return std::nullopt;
}

json::object job_to_wire(const serving::GenerationJob& job, std::chrono::steady_clock::time_point now) {
  json::object o;
  o["prompt"] = ids(job.prompt);
  o["temperature"] = job.sampling.temperature;
  o["top_k"] = job.sampling.top_k;
  o["top_p"] = job.sampling.top_p;
  o["min_p"] = job.sampling.min_p;
  o["seed"] = job.sampling.seed;
  o["max_tokens"] = job.max_tokens;
  json::array stop;
  for (const auto& s : job.stop) stop.push_back(json::string(to_hex(s)));
  o["stop_hex"] = std::move(stop);
  if (job.deadline != std::chrono::steady_clock::time_point::max())
    o["timeout_ms"] =
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(job.deadline - now).count());
  json::array bias;
  for (const auto& [t, b] : job.logit_bias) bias.push_back(json::array{t, b});
  o["logit_bias"] = std::move(bias);
  o["logprobs"] = job.logprobs;
  o["top_logprobs"] = job.top_logprobs;
  o["session"] = job.session;
  o["speculation"] = job.speculation;
  if (job.policy) {
    if (job.policy->spec.empty())
      throw std::invalid_argument("the job's token policy has no spec; it cannot run on an upstream engine");
    o["policy"] = json::parse(job.policy->spec);
  }
  return o;
}

std::shared_ptr<serving::TokenPolicy> policy_from_spec(const json::value& spec,
                                                       std::shared_ptr<const serving::EngineBackend> backend) {
  if (!spec.is_object()) throw RequestError("policy", "policy must be an object");
  const json::object& o = spec.get_object();
  const std::string kind = text(o, "kind");
  const bool thinking = flag(o, "thinking_started", false);
  if (kind == "no_tools") return std::make_shared<serving::NoToolCallsPolicy>(thinking);
  if (kind == "json") {
    const json::value* schema = field(o, "schema");
    protocol::JsonConstraint c = schema ? protocol::JsonConstraint(std::make_shared<const json::value>(*schema))
                                        : protocol::JsonConstraint::any_object();
    auto p = std::make_shared<serving::JsonFormatPolicy>(std::move(backend), thinking, std::move(c));
    p->spec = json::serialize(spec);
    return p;
  }
  if (kind == "tools") {
    std::vector<json::object> tools;
    if (const json::value* t = field(o, "tools")) {
      if (!t->is_array()) throw RequestError("policy.tools", "policy.tools must be an array");
      for (const auto& e : t->get_array()) {
        if (!e.is_object()) throw RequestError("policy.tools", "policy.tools holds objects");
        tools.push_back(e.get_object());
      }
    }
    protocol::ForcedCall forced{flag(o, "required", false), text(o, "function")};
    auto p = std::make_shared<serving::DsmlTokenPolicy>(std::move(backend), thinking, std::move(forced),
                                                        protocol::declared_tools(tools));
    p->spec = json::serialize(spec);
    return p;
  }
  throw RequestError("policy.kind", "policy.kind must be no_tools, json or tools, not '" + kind + "'");
}

serving::GenerationJob job_from_wire(const json::value& body, std::shared_ptr<const serving::EngineBackend> backend) {
  if (!body.is_object()) throw RequestError("", "the body must be a JSON object");
  const json::object& o = body.get_object();
  serving::GenerationJob job;
  const json::value* prompt = field(o, "prompt");
  if (!prompt) throw RequestError("prompt", "prompt (an array of token ids) is required");
  job.prompt = token_ids(*prompt, "prompt", backend->vocab_size());
  if (job.prompt.empty()) throw RequestError("prompt", "prompt is empty");
  job.sampling.temperature = static_cast<float>(number(o, "temperature", job.sampling.temperature));
  job.sampling.top_k = static_cast<int32_t>(count(o, "top_k", 0));
  job.sampling.top_p = static_cast<float>(number(o, "top_p", job.sampling.top_p));
  job.sampling.min_p = static_cast<float>(number(o, "min_p", job.sampling.min_p));
  job.sampling.seed = count(o, "seed", 0);
  job.max_tokens = count(o, "max_tokens", 0);
  if (const json::value* stop = field(o, "stop_hex")) {
    if (!stop->is_array()) throw RequestError("stop_hex", "stop_hex must be an array of hex strings");
    for (const auto& s : stop->get_array()) {
      if (!s.is_string()) throw RequestError("stop_hex", "stop_hex holds hex strings");
      try {
        job.stop.push_back(from_hex(s.get_string()));
      } catch (const std::invalid_argument& e) {
        throw RequestError("stop_hex", std::string("stop_hex: ") + e.what());
      }
    }
  }
  if (field(o, "timeout_ms"))
    job.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(count(o, "timeout_ms", 0));
  if (const json::value* bias = field(o, "logit_bias")) {
    if (!bias->is_array()) throw RequestError("logit_bias", "logit_bias must be an array of [id, bias] pairs");
    for (const auto& pair : bias->get_array()) {
      if (!pair.is_array() || pair.get_array().size() != 2 || !pair.get_array()[1].is_number())
        throw RequestError("logit_bias", "logit_bias holds [id, bias] pairs");
      auto id = token_ids(json::array{pair.get_array()[0]}, "logit_bias", backend->vocab_size());
      job.logit_bias.emplace_back(id[0], pair.get_array()[1].to_number<float>());
    }
  }
  job.logprobs = flag(o, "logprobs", false);
  job.top_logprobs = count(o, "top_logprobs", 0);
  job.session = text(o, "session");
  job.speculation = flag(o, "speculation", true);
  if (const json::value* policy = field(o, "policy")) job.policy = policy_from_spec(*policy, std::move(backend));
  return job;
}

json::object usage_to_wire(const serving::GenerationUsage& u) {
  return json::object{{"prompt_tokens", u.prompt_tokens},         {"cached_tokens", u.cached_tokens},
                      {"completion_tokens", u.completion_tokens}, {"cache", serving::cache_outcome_name(u.cache)},
                      {"queue_seconds", u.queue_seconds},         {"prefill_seconds", u.prefill_seconds},
                      {"decode_seconds", u.decode_seconds},       {"drafted_tokens", u.drafted_tokens},
                      {"accepted_tokens", u.accepted_tokens}};
}

serving::GenerationUsage usage_from_wire(const json::object& o) {
  serving::GenerationUsage u;
  u.prompt_tokens = count(o, "prompt_tokens", 0);
  u.cached_tokens = count(o, "cached_tokens", 0);
  u.completion_tokens = count(o, "completion_tokens", 0);
  const std::string cache = text(o, "cache");
  for (auto c : {serving::CacheOutcome::Cold, serving::CacheOutcome::Live, serving::CacheOutcome::Miss,
                 serving::CacheOutcome::Warm, serving::CacheOutcome::Disk})
    if (cache == serving::cache_outcome_name(c)) u.cache = c;
  u.queue_seconds = number(o, "queue_seconds", 0);
  u.prefill_seconds = number(o, "prefill_seconds", 0);
  u.decode_seconds = number(o, "decode_seconds", 0);
  u.drafted_tokens = count(o, "drafted_tokens", 0);
  u.accepted_tokens = count(o, "accepted_tokens", 0);
  return u;
}

json::object result_to_wire(const serving::GenerationResult& r) {
  json::object o{{"finish", serving::finish_reason_name(r.finish)},
                 {"error", r.error},
                 {"usage", usage_to_wire(r.usage)},
                 {"completion", ids(r.completion)}};
  json::array lps;
  for (const auto& lp : r.logprobs) {
    json::array top;
    for (const auto& [bytes, p] : lp.top) top.push_back(json::array{json::string(to_hex(bytes)), p});
    lps.push_back(json::object{{"bytes", to_hex(lp.bytes)}, {"logprob", lp.logprob}, {"top", std::move(top)}});
  }
  o["logprobs"] = std::move(lps);
  return o;
}

serving::GenerationResult result_from_wire(const json::object& o) {
  serving::GenerationResult r;
  const std::string finish = text(o, "finish");
  auto reason = finish_reason_from_name(finish);
  if (!reason) throw std::invalid_argument("unknown finish reason '" + finish + "'");
  r.finish = *reason;
  r.error = text(o, "error");
  if (const json::value* u = field(o, "usage"); u && u->is_object()) r.usage = usage_from_wire(u->get_object());
  if (const json::value* c = field(o, "completion")) r.completion = token_ids(*c, "completion", 0);
  if (const json::value* lps = field(o, "logprobs"); lps && lps->is_array()) {
    for (const auto& e : lps->get_array()) {
      const json::object& lo = e.as_object();
      serving::TokenLogprob lp;
      lp.bytes = from_hex(lo.at("bytes").as_string());
      lp.logprob = static_cast<float>(lo.at("logprob").to_number<double>());
      for (const auto& t : lo.at("top").as_array())
        lp.top.emplace_back(from_hex(t.as_array()[0].as_string()),
                            static_cast<float>(t.as_array()[1].to_number<double>()));
      r.logprobs.push_back(std::move(lp));
    }
  }
  return r;
}

}  // namespace ds4::upstream
