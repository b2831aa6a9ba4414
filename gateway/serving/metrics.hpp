#pragma once
// ds4d's metrics: the fixed set of series the service exports on GET /metrics.
//
// Names follow the Prometheus conventions (docs/metrics.md §metric-names): the one-word prefix `ds4d_`, base units
// as suffixes (`_seconds`, `_bytes`, `_ratio`), `_total` on counters, labels instead of name
// variants, no high-cardinality labels. The HTTP layer counts requests and tokens, the serving
// worker records queue depth and prefill/decode throughput, the daemon sets the host gauges
// (MemAvailable, the memory floor, PSI) and the load progress. Everything is thread-safe.
#include <string>
#include <string_view>

#include "gateway/serving/prometheus_registry.hpp"

namespace ds4::serving {

class Metrics {
 public:
  Metrics();

  // HTTP: one request finished with `status` on `endpoint` (a route name such as
  // "/v1/chat/completions", or "other" for unknown paths so scanners cannot grow the label set).
  void count_request(std::string_view endpoint, int status);
  void observe_request_duration(std::string_view endpoint, double seconds);

  // Tokens of one finished generation.
  void add_tokens(long prompt, long completion, long cached);

  // Engine worker.
  void observe_prefill(long tokens, double seconds);
  void observe_decode(long tokens, double seconds);
  void observe_time_to_first_token(double seconds);
  void set_queue_depth(long jobs);
  void set_requests_running(long jobs);
  // Time a job waited in the queue before a slot took it.
  void observe_queue_wait(double seconds);
  // One engine step of the batched worker: the sessions in it and its rows by kind.
  void observe_step(long sequences, long decode_rows, long verify_rows, long prefill_rows);
  void count_rejection(std::string_view reason);  // queue_full, memory_floor, loading, shutting_down
  // Exact speculative decoding of one generation: drafts verified and accepted (the rest rejected).
  void add_speculation(long drafted, long accepted);

  // Echo contracts (reasoning/tool-call replay): one violation of `kind`, handled per `mode`.
  void count_contract_violation(std::string_view kind, std::string_view mode);
  // Cache outcome of one generation: "live" (live context reused), "miss", "cold" (empty context).
  void count_cache_outcome(std::string_view outcome);
  // KV checkpoints: event "write", "read", "evict", "reject" or "remove" with its reason (see
  // cache::DiskStore) and the bytes of the file concerned.
  void count_checkpoint_event(std::string_view event, std::string_view reason, double bytes);
  // What the prefix cache holds: level "warm" (RAM) or "disk".
  void set_kv_cache_usage(std::string_view level, double entries, double bytes);

  // Set by the daemon.
  void set_mem_available_bytes(double bytes);
  void set_memory_floor_bytes(double bytes);
  void set_psi_memory_some_avg10_ratio(double ratio);
  void set_psi_memory_full_avg10_ratio(double ratio);
  void set_load_progress_ratio(double ratio);
  void set_model_loaded(bool loaded);

  std::string render() const { return registry_.render(); }
  const PrometheusRegistry& registry() const { return registry_; }

  // Direct access for tests and for the daemon's own additions.
  PrometheusRegistry& registry() { return registry_; }
  MetricFamily& requests() { return *requests_; }
  MetricFamily& contract_violations() { return *contract_violations_; }
  MetricFamily& rejections() { return *rejections_; }

 private:
  PrometheusRegistry registry_;
  MetricFamily *requests_, *request_duration_, *prompt_tokens_, *completion_tokens_, *cached_tokens_,
      *prefill_throughput_, *decode_throughput_, *prefill_seconds_, *decode_seconds_, *ttft_, *queue_depth_, *running_,
      *rejections_, *contract_violations_, *cache_outcomes_, *checkpoint_events_, *checkpoint_bytes_, *kv_entries_,
      *kv_bytes_, *mem_available_, *memory_floor_, *psi_some_, *psi_full_, *load_progress_, *model_loaded_,
      *speculation_, *queue_wait_, *step_sequences_, *step_rows_;
};

}  // namespace ds4::serving
