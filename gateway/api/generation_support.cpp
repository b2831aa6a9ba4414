// Shared generation helpers for the chat and completion endpoints. See generation_support.hpp.
#include "gateway/api/generation_support.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <random>

#include "gateway/protocol/request_error.hpp"

namespace ds4::http {

std::string new_response_id(std::string_view prefix) {
  static const uint64_t process_salt = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}{:016x}{:08x}", prefix, process_salt, counter.fetch_add(1) & 0xffffffffu);
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

sampler::SamplerConfig sampling_for(const protocol::SamplingParams& params, protocol::Thinking thinking) {
  auto check = [](const std::optional<double>& v, const char* name, double lo, double hi, bool lo_open) {
    if (!v) return;
    if (!std::isfinite(*v) || *v > hi || (lo_open ? *v <= lo : *v < lo))
      throw protocol::RequestError(name, fmt::format("{} must be in {}{}, {}]", name, lo_open ? "(" : "[", lo, hi));
  };
  check(params.temperature, "temperature", 0, 100, false);
  check(params.top_p, "top_p", 0, 1, true);
  check(params.min_p, "min_p", 0, 1, false);
  if (params.top_k && *params.top_k > 1'000'000) throw protocol::RequestError("top_k", "top_k is too large");

  sampler::SamplerConfig cfg;  // the reference defaults: T 1, top_p 1, min_p 0.05, no top-k
  cfg.seed = params.seed.value_or(0);
  if (thinking != protocol::Thinking::Off) return cfg;
  if (params.temperature) cfg.temperature = static_cast<float>(*params.temperature);
  if (params.top_p) cfg.top_p = static_cast<float>(*params.top_p);
  if (params.min_p) cfg.min_p = static_cast<float>(*params.min_p);
  if (params.top_k) cfg.top_k = static_cast<int32_t>(*params.top_k);
  return cfg;
}

size_t max_tokens_for(std::optional<uint32_t> requested) {
  if (!requested) return 0;
  if (*requested == 0) throw protocol::RequestError("max_tokens", "max_tokens must be at least 1");
  return *requested;
}

const char* openai_finish_reason(ClientFinish finish) {
  switch (finish) {
    case ClientFinish::Stop: return "stop";
    case ClientFinish::Length: return "length";
    case ClientFinish::ToolCalls: return "tool_calls";
    case ClientFinish::Error: return "error";
  }
  return "stop";
}

ClientFinish client_finish_reason(serving::FinishReason reason) {
  using F = ClientFinish;
  switch (reason) {
    case serving::FinishReason::Eos:
    case serving::FinishReason::StopSequence:
    case serving::FinishReason::ConsumerStop: return F::Stop;
    case serving::FinishReason::MaxTokens:
    case serving::FinishReason::ContextFull:
    case serving::FinishReason::Timeout: return F::Length;
    case serving::FinishReason::Cancelled:
    case serving::FinishReason::Error: return F::Error;
  }
  return F::Error;
}

size_t protocol_token_count(const serving::EngineBackend& backend, std::span<const serving::Token> prompt,
                            const std::vector<std::pair<size_t, size_t>>& client_spans) {
  size_t protocol = 0, offset = 0, k = 0;
  for (serving::Token t : prompt) {
    const size_t begin = offset;
    offset += backend.token_bytes(t).size();
    while (k < client_spans.size() && client_spans[k].second <= begin) ++k;
    // Spans are sorted and disjoint: the first one not ending before the token decides.
    const bool has_client_byte = k < client_spans.size() && client_spans[k].first < offset && offset > begin;
    if (!has_client_byte) ++protocol;
  }
  return protocol;
}

protocol::openai::Usage usage_of(const serving::GenerationUsage& usage, size_t protocol_tokens) {
  protocol::openai::Usage u;
  u.prompt_tokens = usage.prompt_tokens;
  u.completion_tokens = usage.completion_tokens;
  u.cached_tokens = usage.cached_tokens;
  u.protocol_tokens = protocol_tokens;
  return u;
}

ResponseHead sse_head() {
  ResponseHead head;
  head.status = 200;
  head.streaming = true;
  head.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  return head;
}

ResponseHead json_head(unsigned status, std::string body) {
  ResponseHead head;
  head.status = status;
  head.headers = {{"Content-Type", "application/json"}};
  head.body = std::move(body);
  return head;
}

}  // namespace ds4::http
