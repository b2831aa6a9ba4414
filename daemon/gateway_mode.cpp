// Gateway mode's start. See gateway_mode.hpp.
#include "daemon/gateway_mode.hpp"

#include <spdlog/spdlog.h>

#include <sstream>
#include <stdexcept>

#include "gateway/upstream/tokenizer_backend.hpp"

namespace ds4::daemon {

bool gateway_mode(const config::Config& cfg) { return !cfg.engine.upstreams.empty(); }

config::Config gateway_config(const config::Config& given) {
  if (given.engine.tokenizer.empty())
    throw std::invalid_argument(
        "engine.upstreams is set but engine.tokenizer is not: give --tokenizer GGUF (the upstreams' model or any GGUF "
        "with its tokenizer)");
  config::Config cfg = given;
  if (!cfg.model.context) cfg.model.context = 0;
  cfg.cache.hot_bytes = 0;  // the KV caches are the upstreams'
  cfg.cache.dir.clear();
  if (!cfg.memory.floor) cfg.memory.floor = 0;
  if (!cfg.server.max_batch) cfg.server.max_batch = 1;  // no live contexts here: auto has nothing to size
  return cfg;
}

std::shared_ptr<upstream::UpstreamPool> make_upstream_pool(const config::Config& cfg, serving::Metrics& metrics) {
  upstream::PoolConfig pc;
  std::stringstream list(cfg.engine.upstreams);
  for (std::string url; std::getline(list, url, ',');) {
    while (!url.empty() && url.front() == ' ') url.erase(0, 1);
    while (!url.empty() && url.back() == ' ') url.pop_back();
    if (!url.empty()) pc.urls.push_back(url);
  }
  pc.routing = cfg.engine.routing == "round_robin" ? upstream::Routing::RoundRobin : upstream::Routing::Hash;
  return std::make_shared<upstream::UpstreamPool>(std::move(pc), metrics);
}

std::shared_ptr<serving::EngineBackend> connect_upstreams(const config::Config& cfg, upstream::UpstreamPool& pool) {
  auto backend = std::make_shared<upstream::TokenizerBackend>(
      upstream::TokenizerBackend::load_tokenizer(cfg.engine.tokenizer), "", 0);
  const upstream::EngineInfo info = pool.check(backend, std::chrono::seconds(cfg.engine.upstream_wait_s));
  size_t context = info.context_length;
  if (cfg.model.context && *cfg.model.context)
    context = context ? std::min<size_t>(context, *cfg.model.context) : *cfg.model.context;
  if (context == 0)
    throw std::runtime_error(
        "the upstream reports no context length (vLLM and SGLang: max_model_len in /v1/models); "
        "give model.context");
  backend->describe(info.model_id, context);  // before anything else sees the backend
  pool.start(backend);
  spdlog::info("gateway mode: model {} (context {} tokens, vocabulary {:016x}) on {}", info.model_id, context,
               info.vocab_fingerprint, cfg.engine.upstreams);
  return backend;
}

}  // namespace ds4::daemon
