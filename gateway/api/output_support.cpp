// Output controls on a job and logprobs in the response shapes. See output_support.hpp.
#include "gateway/api/output_support.hpp"

#include "gateway/protocol/request_error.hpp"
#include "gateway/serving/json_format_policy.hpp"

namespace ds4::http {

namespace json = boost::json;

namespace {

// A token's bytes as JSON text: valid UTF-8 as is, anything else (a token that ends inside a
// character) with U+FFFD for each stray byte; `bytes` in the responses keeps the exact bytes.
std::string token_text(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= bytes.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(bytes, i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

json::array byte_values(const std::string& bytes) {
  json::array out;
  for (unsigned char c : bytes) out.push_back(c);
  return out;
}

json::object entry(const std::string& bytes, float logprob) {
  return json::object{{"token", token_text(bytes)}, {"logprob", logprob}, {"bytes", byte_values(bytes)}};
}

json::array openai_entries(const std::vector<serving::TokenLogprob>& tokens) {
  json::array out;
  for (const serving::TokenLogprob& t : tokens) {
    json::object e = entry(t.bytes, t.logprob);
    json::array top;
    for (const auto& [bytes, lp] : t.top) top.push_back(entry(bytes, lp));
    e["top_logprobs"] = std::move(top);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

void apply_output_controls(serving::GenerationJob& job, std::shared_ptr<serving::EngineBackend> backend,
                           const protocol::OutputControls& output, bool stream, bool tools_active,
                           bool thinking_started) {
  for (const auto& [id, bias] : output.logit_bias) {
    if (static_cast<size_t>(id) >= backend->vocab_size())
      throw protocol::RequestError("logit_bias." + std::to_string(id),
                                   "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                       std::to_string(backend->vocab_size()) + " tokens");
    job.logit_bias.emplace_back(id, bias);
  }
  if (output.logprobs && stream)
    throw protocol::RequestError(output.logprobs_param, "'" + output.logprobs_param +
                                                            "' is not supported with stream: true; ask without "
                                                            "streaming to get log-probabilities");
  job.logprobs = output.logprobs;
  job.top_logprobs = output.top_logprobs;
  if (!output.json()) return;
  if (tools_active || job.policy)
    throw protocol::RequestError(output.format_param, "a JSON '" + output.format_param +
                                                          "' together with tools is not supported; send one or "
                                                          "the other (or tool_choice: none)");
  job.policy = serving::response_format_policy(std::move(backend), output, thinking_started);
}

json::object chat_logprobs(const std::vector<serving::TokenLogprob>& tokens) {
  return json::object{{"content", openai_entries(tokens)}, {"refusal", nullptr}};
}

json::object completion_logprobs(const std::vector<serving::TokenLogprob>& tokens) {
  json::array text, lps, top, offsets;
  size_t offset = 0;
  for (const serving::TokenLogprob& t : tokens) {
    text.push_back(json::string(token_text(t.bytes)));
    lps.push_back(t.logprob);
    json::object alts;
    for (const auto& [bytes, lp] : t.top) alts[token_text(bytes)] = lp;
    top.push_back(std::move(alts));
    offsets.push_back(offset);
    offset += t.bytes.size();
  }
  return json::object{{"tokens", std::move(text)},
                      {"token_logprobs", std::move(lps)},
                      {"top_logprobs", std::move(top)},
                      {"text_offset", std::move(offsets)}};
}

json::array responses_logprobs(const std::vector<serving::TokenLogprob>& tokens) { return openai_entries(tokens); }

}  // namespace ds4::http
