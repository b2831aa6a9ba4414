// The OpenAI completions API of vLLM and SGLang. See completions_wire.hpp.
#include "gateway/upstream/completions_wire.hpp"

#include <stdexcept>

namespace ds4::upstream {
namespace json = boost::json;

namespace {

const json::value* field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

size_t count(const json::value& v, std::string_view what) {
  if (v.is_uint64()) return static_cast<size_t>(v.get_uint64());
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<size_t>(v.get_int64());
  throw std::runtime_error(std::string(what) + " is not a non-negative integer");
}

}  // namespace

ServedModel parse_served_models(std::string_view body) {
  try {
    const json::object o = json::parse(body).as_object();
    const json::array& data = o.at("data").as_array();
    if (data.empty()) throw std::runtime_error("it lists no model");
    const json::object& first = data.at(0).as_object();
    ServedModel m;
    m.id = std::string(first.at("id").as_string());
    if (const json::value* len = field(first, "max_model_len")) m.context_length = count(*len, "max_model_len");
    return m;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed /v1/models answer: ") + e.what());
  }
}

json::object completions_request(const serving::GenerationJob& job, UpstreamKind kind, const std::string& model,
                                 size_t context_length, std::span<const serving::Token> end_tokens) {
  json::object o;
  o["model"] = model;
  json::array prompt;
  prompt.reserve(job.prompt.size());
  for (serving::Token t : job.prompt) prompt.push_back(t);
  o["prompt"] = std::move(prompt);
  // The engines' default is 16 tokens; "until the end" is the room left in the context.
  size_t max_tokens = job.max_tokens;
  if (max_tokens == 0) max_tokens = context_length > job.prompt.size() ? context_length - job.prompt.size() : 1;
  o["max_tokens"] = max_tokens;
  o["temperature"] = job.sampling.temperature;
  o["top_p"] = job.sampling.top_p;
  o["top_k"] = job.sampling.top_k > 0 ? job.sampling.top_k : -1;  // -1: no top-k cut in both engines
  o["min_p"] = job.sampling.min_p;
  if (job.sampling.seed != 0) o["seed"] = job.sampling.seed & 0x7fffffffffffffffULL;  // a signed 64-bit field
  o["stream"] = true;
  o["stream_options"] = json::object{{"include_usage", true}};
  o["return_token_ids"] = true;
  o["skip_special_tokens"] = false;
  o["spaces_between_special_tokens"] = false;
  json::array stops;
  for (serving::Token t : end_tokens) stops.push_back(t);
  o["stop_token_ids"] = std::move(stops);
  if (!job.logit_bias.empty()) {
    json::object bias;
    for (const auto& [t, b] : job.logit_bias) bias[std::to_string(t)] = b;
    o["logit_bias"] = std::move(bias);
  }
  if (job.logprobs) {
    o["logprobs"] = job.top_logprobs;
    if (kind == UpstreamKind::Vllm) o["return_tokens_as_token_ids"] = true;
  }
  return o;
}

std::optional<CompletionsChunk> parse_completions_line(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (!line.starts_with("data:")) return std::nullopt;  // blank, ": comment", "event:", "id:"
  line.remove_prefix(5);
  if (line.starts_with(' ')) line.remove_prefix(1);
  CompletionsChunk c;
  if (line == "[DONE]") {
    c.done = true;
    return c;
  }
  try {
    const json::object o = json::parse(line).as_object();
    if (const json::value* e = field(o, "error")) {
      c.error = e->is_object() && e->as_object().contains("message") ? std::string(e->at("message").as_string())
                                                                     : json::serialize(*e);
      return c;
    }
    if (const json::value* kind = field(o, "object"); kind && kind->is_string() && kind->get_string() == "error") {
      c.error = field(o, "message") ? std::string(o.at("message").as_string()) : std::string(line);
      return c;
    }
    if (const json::value* choices = field(o, "choices"); choices && !choices->as_array().empty()) {
      const json::object& ch = choices->as_array().at(0).as_object();
      c.choice = true;
      if (const json::value* text = field(ch, "text")) c.text = std::string(text->as_string());
      if (const json::value* ids = field(ch, "token_ids")) {
        c.has_token_ids = true;
        for (const json::value& id : ids->as_array()) c.tokens.push_back(static_cast<serving::Token>(id.as_int64()));
      }
      if (const json::value* f = field(ch, "finish_reason")) c.finish = std::string(f->as_string());
      if (const json::value* lp = field(ch, "logprobs")) {
        const json::object& l = lp->as_object();
        const json::value* values = field(l, "token_logprobs");
        const json::value* tops = field(l, "top_logprobs");
        const size_t n = values ? values->as_array().size() : 0;
        for (size_t i = 0; i < n; ++i) {
          ChunkLogprob p;
          const json::value& v = values->as_array()[i];
          p.logprob = v.is_null() ? 0.0f : static_cast<float>(v.to_number<double>());
          if (tops && i < tops->as_array().size() && tops->as_array()[i].is_object())
            for (const auto& kv : tops->as_array()[i].as_object())
              p.top.emplace_back(std::string(kv.key()), static_cast<float>(kv.value().to_number<double>()));
          c.logprobs.push_back(std::move(p));
        }
      }
    }
    if (const json::value* u = field(o, "usage")) {
      const json::object& uo = u->as_object();
      c.has_usage = true;
      if (const json::value* p = field(uo, "prompt_tokens")) c.prompt_tokens = count(*p, "usage.prompt_tokens");
      if (const json::value* p = field(uo, "completion_tokens"))
        c.completion_tokens = count(*p, "usage.completion_tokens");
      if (const json::value* d = field(uo, "prompt_tokens_details"))
        if (const json::value* cached = field(d->as_object(), "cached_tokens"))
          c.cached_tokens = count(*cached, "usage.prompt_tokens_details.cached_tokens");
    }
    return c;
  } catch (const std::exception& e) {
    throw std::runtime_error("malformed completions chunk (" + std::string(e.what()) +
                             "): " + std::string(line.substr(0, 200)));
  }
}

std::string completions_error_message(std::string_view body) {
  try {
    const json::object o = json::parse(body).as_object();
    if (const json::value* e = field(o, "error"); e && e->is_object())
      if (const json::value* m = field(e->as_object(), "message"); m && m->is_string())
        return std::string(m->get_string());
    if (const json::value* m = field(o, "message"); m && m->is_string()) return std::string(m->get_string());
    if (const json::value* d = field(o, "detail"); d && d->is_string()) return std::string(d->get_string());
  } catch (const std::exception&) {
  }
  return std::string(body.substr(0, 300));
}

}  // namespace ds4::upstream
