// The token-level engine endpoints an upstream ds4d offers a gateway (the wire format is
// gateway/upstream/job_wire.hpp; docs/scale-out.md §engine-protocol):
//
//   GET  /engine/info      {"model_id","vocab_size","context_length","vocab_fingerprint"}: the
//                          gateway checks its tokenizer against it at start and polls it as
//                          the health check.
//   POST /engine/generate  a job (token ids in) -> 200 application/x-ndjson, one event per line
//                          (token ids and bytes out), or the refusal (429/503) before any.
//
// The job goes through Service::submit like a chat turn's, so queueing, the prefix cache and the
// token policy are the ones a local request gets.
#include <boost/json.hpp>
#include <mutex>

#include "gateway/api/endpoint_support.hpp"
#include "gateway/api/endpoints.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/transport/response_channel.hpp"
#include "gateway/upstream/job_wire.hpp"
#include "gateway/upstream/vocab_fingerprint.hpp"

namespace ds4::http {
namespace json = boost::json;

namespace {

// Forwards every call to the job's own policy (or behaves as none) and notes the tokens that
// become output, so that each text event names the token ids behind it.
class TokenTap final : public serving::TokenPolicy {
 public:
  explicit TokenTap(std::shared_ptr<serving::TokenPolicy> inner) : inner_(std::move(inner)) {}
  std::optional<serving::Token> choose(std::span<const float> logits) override {
    return inner_ ? inner_->choose(logits) : std::nullopt;
  }
  void accepted(serving::Token token, std::string_view bytes) override {
    pending.push_back(token);
    if (inner_) inner_->accepted(token, bytes);
  }
  bool may_end() const override { return inner_ ? inner_->may_end() : true; }
  bool refuses(std::string_view bytes) const override { return inner_ && inner_->refuses(bytes); }
  std::vector<std::string> alternatives() const override {
    return inner_ ? inner_->alternatives() : std::vector<std::string>{};
  }
  void prefer(size_t i) override {
    if (inner_) inner_->prefer(i);
  }
  bool restricts() const override { return inner_ && inner_->restricts(); }
  bool admits(serving::Token token) const override { return !inner_ || inner_->admits(token); }

  std::vector<serving::Token> pending;  // worker thread only

 private:
  std::shared_ptr<serving::TokenPolicy> inner_;
};

class EventSink final : public serving::GenerationSink {
 public:
  EventSink(std::shared_ptr<ResponseChannel> channel, std::shared_ptr<TokenTap> tap)
      : channel_(std::move(channel)), tap_(std::move(tap)) {}

  void on_queued(size_t position) override { send(json::object{{"queued", position}}); }
  void on_prefill_progress(size_t done, size_t total) override {
    send(json::object{{"prefill", json::array{done, total}}});
  }
  void on_prefilled(const serving::GenerationUsage& usage) override {
    send(json::object{{"prefilled", upstream::usage_to_wire(usage)}});
  }
  bool on_text(std::string_view bytes) override {
    json::array ids;
    for (serving::Token t : tap_->pending) ids.push_back(t);
    tap_->pending.clear();
    send(json::object{{"tokens", std::move(ids)}, {"bytes", upstream::to_hex(bytes)}});
    return true;
  }
  void on_finished(const serving::GenerationResult& result) override {
    send(json::object{{"finished", upstream::result_to_wire(result)}});
    channel_->finish();
  }

 private:
  void send(const json::object& event) {
    std::lock_guard lock(mu_);
    if (!head_sent_) {
      ResponseHead head;
      head.headers.emplace_back("Content-Type", "application/x-ndjson");
      head.headers.emplace_back("Cache-Control", "no-cache");
      head.streaming = true;
      channel_->send_head(std::move(head));
      head_sent_ = true;
    }
    channel_->send_chunk(json::serialize(event) + "\n");
  }

  std::mutex mu_;  // on_queued may come from the submitting thread or the ticker
  bool head_sent_ = false;
  std::shared_ptr<ResponseChannel> channel_;
  std::shared_ptr<TokenTap> tap_;
};

}  // namespace

void add_engine_endpoints(Router& router, EndpointEnv env) {
  serving::Service& service = env.service;

  router.add("GET", "/engine/info", [&service](RequestContext&) {
    auto b = require_backend(service);
    if (!b.backend) return b.reply;
    return Reply::json(200, json::object{{"model_id", b.backend->model_id()},
                                         {"vocab_size", b.backend->vocab_size()},
                                         {"context_length", b.backend->context_length()},
                                         {"vocab_fingerprint", upstream::vocab_fingerprint(*b.backend)}});
  });

  router.add("POST", "/engine/generate", [&service](RequestContext& ctx) {
    auto b = require_backend(service);
    if (!b.backend) return b.reply;
    serving::GenerationJob job;
    try {
      job = upstream::job_from_wire(parse_json_body(ctx.request), b.backend);
    } catch (const protocol::RequestError& e) {
      return request_error_reply(e);
    }
    if (job.prompt.size() >= b.backend->context_length())
      return api_error(400,
                       "prompt has " + std::to_string(job.prompt.size()) + " tokens, the context holds " +
                           std::to_string(b.backend->context_length()),
                       "prompt", "context_length_exceeded");
    auto channel = std::make_shared<ResponseChannel>(ctx.executor);
    auto tap = std::make_shared<TokenTap>(std::move(job.policy));
    job.policy = tap;
    job.cancelled = channel->cancel_flag();
    job.sink = std::make_shared<EventSink>(channel, tap);
    if (auto refusal = service.submit(std::move(job))) return refusal_reply(*refusal);
    return Reply::deferred(std::move(channel));
  });
}

}  // namespace ds4::http
