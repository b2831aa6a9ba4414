// Gateway mode's job runner over upstream engines. See upstream_pool.hpp.
#include "gateway/upstream/upstream_pool.hpp"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <set>
#include <stdexcept>

#include "gateway/upstream/completions_stream.hpp"
#include "gateway/upstream/completions_wire.hpp"
#include "gateway/upstream/job_wire.hpp"
#include "gateway/upstream/route_key.hpp"
#include "gateway/upstream/vocab_fingerprint.hpp"
#include "gateway/upstream/vocab_probe.hpp"

namespace ds4::upstream {
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

EngineInfo parse_engine_info(const std::string& body) {
  try {
    const json::object o = json::parse(body).as_object();
    EngineInfo info;
    info.model_id = std::string(o.at("model_id").as_string());
    info.vocab_size = o.at("vocab_size").to_number<size_t>();
    info.context_length = o.at("context_length").to_number<size_t>();
    info.vocab_fingerprint = o.at("vocab_fingerprint").to_number<uint64_t>();
    return info;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed /engine/info answer: ") + e.what());
  }
}

UpstreamPool::UpstreamPool(PoolConfig config, serving::Metrics& metrics)
    : config_(std::move(config)), metrics_(metrics) {
  if (config_.urls.empty()) throw std::invalid_argument("engine.upstreams: no upstream given");
  std::set<std::string> seen;
  for (const auto& u : config_.urls) {
    Node n;
    n.url = parse_upstream_url(u);
    if (!seen.insert(n.url.text).second)
      throw std::invalid_argument("engine.upstreams: " + n.url.text + " is given twice");
    names_.push_back(n.url.text);
    nodes_.push_back(std::move(n));
  }
  auto& r = metrics_.registry();
  up_ =
      &r.gauge("ds4d_upstream_up", "1 while the upstream engine answers its health check (gateway mode)", {"upstream"});
  requests_ = &r.counter("ds4d_upstream_requests_total",
                         "jobs per upstream engine by outcome: ok, failover (moved to the next node before "
                         "streaming), lost (the node failed mid-stream), refused, error, cancelled",
                         {"upstream", "outcome"});
  inflight_ = &r.gauge("ds4d_upstream_inflight", "jobs running on the upstream engine", {"upstream"});
  for (const auto& n : names_) {
    up_->set({n}, 0);
    inflight_->set({n}, 0);
  }
}

UpstreamPool::~UpstreamPool() { stop(std::chrono::milliseconds(0)); }

EngineInfo UpstreamPool::check(std::shared_ptr<const serving::EngineBackend> tokenizer,
                               std::chrono::milliseconds wait) {
  const uint64_t fingerprint = vocab_fingerprint(*tokenizer);
  fingerprint_ = fingerprint;
  tokenizer_ = std::move(tokenizer);
  const auto until = Clock::now() + wait;
  std::optional<EngineInfo> first;
  std::string errors;
  for (;;) {
    errors.clear();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      try {
        if (nodes_[i].url.kind != UpstreamKind::Ds4d) {
          EngineInfo info = served_info(i);
          info.vocab_fingerprint = fingerprint;
          const std::string bad = vocab_mismatch(i);
          if (!bad.empty())
            throw std::invalid_argument(bad +
                                        "; serve the model of engine.tokenizer there or give the GGUF the "
                                        "upstream serves");
          mark(i, true, "up");
          if (!first) first = info;
          continue;
        }
        HttpAnswer a = http_get(nodes_[i].url, "/engine/info", config_.health_timeout);
        if (a.status != 200)
          throw std::runtime_error(nodes_[i].url.text + ": /engine/info answered " + std::to_string(a.status));
        EngineInfo info = parse_engine_info(a.body);
        if (info.vocab_fingerprint != fingerprint)
          throw std::invalid_argument(
              fmt::format("{}: its vocabulary (fingerprint {:016x}, {} tokens) is not the one of engine.tokenizer "
                          "(fingerprint {:016x}); give the GGUF the upstream serves",
                          nodes_[i].url.text, info.vocab_fingerprint, info.vocab_size, fingerprint));
        mark(i, true, "up");
        if (!first) first = info;
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
      } catch (const std::exception& e) {
        mark(i, false, "down", e.what());
        errors += std::string("; ") + e.what();
      }
    }
    if (first) return *first;
    if (Clock::now() >= until)
      throw std::runtime_error("no upstream engine answered /engine/info or /v1/models" + errors);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string UpstreamPool::vocab_mismatch(size_t i) {
  std::string model;
  {
    std::lock_guard lock(mu_);
    model = nodes_[i].model;
  }
  const UpstreamUrl& url = nodes_[i].url;
  const HttpAnswer a = http_post_json(url, "/tokenize", vocab_probe_request(model), config_.health_timeout);
  if (a.status == 404) {
    bool first;
    {
      std::lock_guard lock(mu_);
      first = nodes_[i].note.empty();
      nodes_[i].note = "vocabulary not checked: it has no POST /tokenize (404)";
    }
    if (first)
      spdlog::warn(
          "upstream {}: its vocabulary cannot be checked (POST /tokenize answered 404); make sure it "
          "serves the model of engine.tokenizer",
          url.text);
    return {};
  }
  if (a.status != 200)
    throw std::runtime_error(url.text + ": /tokenize answered " + std::to_string(a.status) + ": " +
                             completions_error_message(a.body));
  {
    std::lock_guard lock(mu_);
    nodes_[i].note.clear();
  }
  const auto mismatch = vocab_probe_mismatch(a.body, *tokenizer_);
  return mismatch ? url.text + ": its vocabulary is not the one of engine.tokenizer: " + *mismatch : std::string();
}

EngineInfo UpstreamPool::served_info(size_t i) {
  HttpAnswer a = http_get(nodes_[i].url, "/v1/models", config_.health_timeout);
  if (a.status != 200)
    throw std::runtime_error(nodes_[i].url.text + ": /v1/models answered " + std::to_string(a.status) + ": " +
                             completions_error_message(a.body));
  const ServedModel served = parse_served_models(a.body);
  {
    std::lock_guard lock(mu_);
    nodes_[i].model = served.id;
    nodes_[i].context = served.context_length;
  }
  EngineInfo info;
  info.model_id = served.id;
  info.context_length = served.context_length;
  return info;
}

void UpstreamPool::start(std::shared_ptr<const serving::EngineBackend> tokenizer) {
  auto user = tokenizer->encode("<｜User｜>");
  user_token_ = user.size() == 1 ? user[0] : -1;
  for (size_t t = 0; t < tokenizer->vocab_size(); ++t)
    if (tokenizer->is_end_of_generation(static_cast<serving::Token>(t)))
      end_tokens_.push_back(static_cast<serving::Token>(t));
  context_ = tokenizer->context_length();  // the gateway's: the first node's, or model.context
  tokenizer_ = std::move(tokenizer);
  health_ = std::thread([this] { health_main(); });
}

void UpstreamPool::mark(size_t i, bool up, std::string state, std::string error) {
  bool changed;
  const std::string shown = state + (error.empty() ? "" : ": " + error);
  {
    std::lock_guard lock(mu_);
    Node& n = nodes_[i];
    changed = n.up != up || n.state != state;
    n.up = up;
    n.state = std::move(state);
    n.last_error = std::move(error);
    if (n.state == "incompatible") n.incompatible = true;
  }
  up_->set({names_[i]}, up ? 1 : 0);
  if (changed) {
    if (up) spdlog::info("upstream {} is up", names_[i]);
    else spdlog::warn("upstream {} is {}", names_[i], shown);
  }
}

void UpstreamPool::probe(size_t i) {
  try {
    if (nodes_[i].url.kind != UpstreamKind::Ds4d) {
      served_info(i);
      bool was_up;
      {
        std::lock_guard lock(mu_);
        was_up = nodes_[i].up;
      }
      // A node that comes back may be another model now: the probe again.
      if (!was_up) {
        const std::string bad = vocab_mismatch(i);
        if (!bad.empty()) return mark(i, false, "incompatible", bad);
      }
      return mark(i, true, "up");
    }
    HttpAnswer a = http_get(nodes_[i].url, "/engine/info", config_.health_timeout);
    if (a.status == 503) return mark(i, false, "draining", "it answers 503 (loading or stopping)");
    if (a.status != 200) return mark(i, false, "down", "/engine/info answered " + std::to_string(a.status));
    EngineInfo info = parse_engine_info(a.body);
    if (info.vocab_fingerprint != fingerprint_)
      return mark(i, false, "incompatible", "its vocabulary fingerprint differs from engine.tokenizer's");
    mark(i, true, "up");
  } catch (const std::exception& e) {
    mark(i, false, "down", e.what());
  }
}

void UpstreamPool::health_main() {
  auto last_probe = Clock::time_point{};
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // Deadlines and cancellations reach job threads blocked in a read by closing their socket.
    const auto now = Clock::now();
    for (auto& r : running_)
      if (r.cancelled->load() || now > r.deadline) r.call->shutdown();
    lock.unlock();
    if (Clock::now() - last_probe >= config_.health_interval) {
      last_probe = Clock::now();
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (!nodes_[i].incompatible) probe(i);
    }
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
  }
}

std::vector<size_t> UpstreamPool::ranking(const std::string& key) {
  std::vector<size_t> order;
  if (config_.routing == Routing::RoundRobin) {
    std::lock_guard lock(mu_);
    const size_t first = next_++ % nodes_.size();
    for (size_t k = 0; k < nodes_.size(); ++k) order.push_back((first + k) % nodes_.size());
  } else {
    order = rendezvous_order(key, names_);
  }
  // Up nodes first (in rank order), then the others as a last resort; never an incompatible one.
  std::vector<size_t> up, down;
  std::lock_guard lock(mu_);
  for (size_t i : order) {
    if (nodes_[i].incompatible) continue;
    (nodes_[i].up ? up : down).push_back(i);
  }
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

std::optional<serving::Refusal> UpstreamPool::submit(serving::GenerationJob job) {
  std::lock_guard lock(mu_);
  if (stopping_) return serving::Refusal{503, "shutting_down", "the server is shutting down", {}};
  ++jobs_;
  std::thread([this, job = std::move(job)]() mutable {
    run_job(std::move(job));
    std::lock_guard lock(mu_);
    --jobs_;
    cv_.notify_all();
  }).detach();
  return std::nullopt;
}

void UpstreamPool::run_job(serving::GenerationJob job) {
  const std::string key = route_key(job, user_token_);
  serving::GenerationResult result;
  result.usage.prompt_tokens = job.prompt.size();
  // The engine protocol's body (a policy without a spec cannot go to a ds4d; vLLM and SGLang
  // nodes check the policy here instead).
  std::string body, body_error;
  try {
    body = json::serialize(job_to_wire(job, Clock::now()));
  } catch (const std::exception& e) {
    body_error = e.what();
  }
  const std::vector<std::pair<std::string, std::string>> headers{{std::string(kRouteKeyHeader), key}};
  std::string last_error = "no upstream engine is configured";
  for (size_t i : ranking(key)) {
    const std::string& name = names_[i];
    if (job.cancelled->load()) break;
    const UpstreamKind kind = nodes_[i].url.kind;
    if (kind == UpstreamKind::Ds4d && !body_error.empty()) {
      last_error = name + ": " + body_error;
      continue;
    }
    auto call = std::make_shared<StreamCall>();
    std::list<Running>::iterator self;
    std::string model;
    size_t context = 0;
    {
      std::lock_guard lock(mu_);
      self = running_.insert(running_.end(), Running{call, job.cancelled, job.deadline + std::chrono::seconds(2)});
      ++nodes_[i].inflight;
      inflight_->set({name}, double(nodes_[i].inflight));
      model = nodes_[i].model;
      context = nodes_[i].context ? nodes_[i].context : context_;
    }
    bool left = false;
    auto leave = [&] {  // once: a throw after it (a stream without its end) reaches the catch
      if (left) return;
      left = true;
      std::lock_guard lock(mu_);
      running_.erase(self);
      --nodes_[i].inflight;
      inflight_->set({name}, double(nodes_[i].inflight));
    };
    bool committed = false;                          // the sink heard the prompt is in: no failover from here on
    std::unique_ptr<CompletionsStream> completions;  // vLLM, SGLang
    try {
      unsigned status;
      if (kind == UpstreamKind::Ds4d) {
        status = call->open(nodes_[i].url, "/engine/generate", body, headers, config_.connect_timeout);
      } else {
        if (model.empty()) throw std::runtime_error(name + ": its served model is not known yet (/v1/models)");
        completions = std::make_unique<CompletionsStream>(job, *tokenizer_, name);
        status = call->open(nodes_[i].url, "/v1/completions",
                            json::serialize(completions_request(job, kind, model, context, end_tokens_)), headers,
                            config_.connect_timeout);
      }
      if (status != 200) {
        const std::string message = completions_error_message(call->body());
        if (status == 429 || status == 503) {
          last_error = name + " refused the job (" + std::to_string(status) + "): " + message;
          requests_->add({name, "refused"}, 1);
          leave();
          continue;
        }
        // The job itself is wrong (400): every node would say so.
        requests_->add({name, "error"}, 1);
        leave();
        result.finish = serving::FinishReason::Error;
        result.error = "upstream " + name + " rejected the job (" + std::to_string(status) + "): " + message;
        job.sink->on_finished(result);
        return;
      }
      if (completions) {
        call->read_lines([&](std::string_view line) {
          const bool more = completions->line(line);
          committed = completions->committed();
          return more;
        });
        if (!completions->over()) completions->close();
        leave();
        const serving::GenerationResult& r = completions->result();
        requests_->add({name, r.finish == serving::FinishReason::Error ? "error" : "ok"}, 1);
        job.sink->on_finished(r);
        return;
      }
      bool finished = false;
      const bool complete = call->read_lines([&](std::string_view line) {
        if (line.empty()) return true;
        const json::object ev = json::parse(line).as_object();
        if (const auto* q = ev.if_contains("queued")) {
          job.sink->on_queued(q->to_number<size_t>());
        } else if (const auto* p = ev.if_contains("prefill")) {
          job.sink->on_prefill_progress(p->as_array().at(0).to_number<size_t>(),
                                        p->as_array().at(1).to_number<size_t>());
        } else if (const auto* u = ev.if_contains("prefilled")) {
          committed = true;
          result.usage = usage_from_wire(u->as_object());
          job.sink->on_prefilled(result.usage);
        } else if (const auto* t = ev.if_contains("tokens")) {
          for (const auto& id : t->as_array()) result.completion.push_back(static_cast<serving::Token>(id.as_int64()));
          const std::string bytes = from_hex(ev.at("bytes").as_string());
          if (!bytes.empty() && !job.sink->on_text(bytes)) {
            result.finish = serving::FinishReason::ConsumerStop;
            result.usage.completion_tokens = result.completion.size();
            return false;  // closing the connection cancels the job upstream
          }
        } else if (const auto* f = ev.if_contains("finished")) {
          result = result_from_wire(f->as_object());
          finished = true;
        }
        return true;
      });
      leave();
      if (!complete) {
        requests_->add({name, "ok"}, 1);
        job.sink->on_finished(result);
        return;
      }
      if (!finished) throw std::runtime_error(name + ": the stream ended without its finished event");
      requests_->add({name, "ok"}, 1);
      job.sink->on_finished(result);
      return;
    } catch (const std::exception& e) {
      leave();
      last_error = e.what();
      if (completions) {
        result = completions->result();
        committed = completions->committed();
      }
      if (job.cancelled->load() || Clock::now() > job.deadline) {
        requests_->add({name, "cancelled"}, 1);
        result.finish = job.cancelled->load() ? serving::FinishReason::Cancelled : serving::FinishReason::Timeout;
        result.usage.completion_tokens = result.completion.size();
        job.sink->on_finished(result);
        return;
      }
      mark(i, false, "down", e.what());
      if (committed) {
        // The client already has part of the answer: end it cleanly, in the API's shape.
        requests_->add({name, "lost"}, 1);
        result.finish = serving::FinishReason::Error;
        result.error = "the upstream engine " + name + " failed mid-stream: " + e.what();
        result.usage.completion_tokens = result.completion.size();
        job.sink->on_finished(result);
        return;
      }
      requests_->add({name, "failover"}, 1);
      spdlog::warn("upstream {} failed before streaming ({}); trying the next node", name, e.what());
      result.completion.clear();
      result.logprobs.clear();
    }
  }
  result.finish = job.cancelled->load() ? serving::FinishReason::Cancelled : serving::FinishReason::Error;
  if (result.finish == serving::FinishReason::Error)
    result.error = "no upstream engine could take the job: " + last_error;
  job.sink->on_finished(result);
}

void UpstreamPool::stop(std::chrono::milliseconds drain) {
  std::unique_lock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  if (!cv_.wait_for(lock, drain, [&] { return jobs_ == 0; }))
    for (auto& r : running_) {
      r.cancelled->store(true);
      r.call->shutdown();
    }
  cv_.wait(lock, [&] { return jobs_ == 0; });
  lock.unlock();
  if (health_.joinable()) health_.join();
}

bool UpstreamPool::available() const {
  std::lock_guard lock(mu_);
  for (const Node& n : nodes_)
    if (n.up) return true;
  return false;
}

std::string UpstreamPool::status_json() const {
  json::array out;
  std::lock_guard lock(mu_);
  for (const Node& n : nodes_) {
    json::object o{
        {"url", n.url.text}, {"kind", upstream_kind_name(n.url.kind)}, {"state", n.state}, {"inflight", n.inflight}};
    if (!n.last_error.empty()) o["error"] = n.last_error;
    if (!n.note.empty()) o["note"] = n.note;
    out.push_back(std::move(o));
  }
  return json::serialize(out);
}

}  // namespace ds4::upstream
