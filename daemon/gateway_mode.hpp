#pragma once
// ds4d in gateway mode (engine.upstreams set; docs/scale-out.md): no model is loaded; the
// Service hands its jobs to an UpstreamPool and tokenizes with the tokenizer of engine.tokenizer,
// checked against the upstreams before the daemon reports ready.
#include <memory>

#include "config/config.hpp"
#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/upstream/upstream_pool.hpp"

namespace ds4::daemon {

bool gateway_mode(const config::Config& cfg);
// The configuration with the memory budgets a model-less process needs (no context of its own,
// no KV cache, no memory floor unless one is given). Throws std::invalid_argument when
// engine.tokenizer is missing.
config::Config gateway_config(const config::Config& given);
std::shared_ptr<upstream::UpstreamPool> make_upstream_pool(const config::Config& cfg, serving::Metrics& metrics);
// Loads the tokenizer, waits for an upstream (engine.upstream_wait_s), checks every answering
// one's vocabulary against it and starts the health checks. Throws with the reason.
std::shared_ptr<serving::EngineBackend> connect_upstreams(const config::Config& cfg, upstream::UpstreamPool& pool);

}  // namespace ds4::daemon
