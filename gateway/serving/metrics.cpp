// The ds4d_* series. See metrics.hpp for the naming rules and who updates what.
#include "gateway/serving/metrics.hpp"

namespace ds4::serving {
namespace {

// Tokens per second: the full model decodes a few to a few tens per second on the CPU and
// prefills hundreds to thousands; the tiny test model is far faster, hence the wide range.
const std::vector<double> kThroughputBuckets = {0.5, 1,   2,    5,    10,   20,    50,   100,
                                                200, 500, 1000, 2000, 5000, 10000, 50000};
const std::vector<double> kSecondsBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};

}  // namespace

Metrics::Metrics() {
  auto& r = registry_;
  requests_ =
      &r.counter("ds4d_http_requests_total", "HTTP requests by endpoint and status code.", {"endpoint", "status"});
  request_duration_ =
      &r.histogram("ds4d_http_request_duration_seconds", "Time from request read to response end, by endpoint.",
                   kSecondsBuckets, {"endpoint"});
  prompt_tokens_ = &r.counter("ds4d_prompt_tokens_total", "Prompt tokens of finished generations.");
  completion_tokens_ = &r.counter("ds4d_completion_tokens_total", "Sampled tokens of finished generations.");
  cached_tokens_ =
      &r.counter("ds4d_cached_tokens_total", "Prompt tokens reused from a restore point (live, warm or disk).");
  prefill_throughput_ = &r.histogram("ds4d_prefill_throughput_tokens_per_second",
                                     "Prefill speed of each generation's uncached prompt suffix.", kThroughputBuckets);
  decode_throughput_ =
      &r.histogram("ds4d_decode_throughput_tokens_per_second", "Decode speed of each generation.", kThroughputBuckets);
  prefill_seconds_ = &r.counter("ds4d_prefill_seconds_total", "Time spent in prefill.");
  decode_seconds_ = &r.counter("ds4d_decode_seconds_total", "Time spent sampling and decoding.");
  ttft_ = &r.histogram("ds4d_time_to_first_token_seconds", "Time from enqueue to the first sampled token.",
                       kSecondsBuckets);
  queue_depth_ = &r.gauge("ds4d_queue_depth", "Generation jobs waiting for the engine worker.");
  running_ = &r.gauge("ds4d_requests_running", "Generation jobs running now: the active sessions (at most max_batch).");
  queue_wait_ =
      &r.histogram("ds4d_queue_wait_seconds", "Time from enqueue until a session slot took the job.", kSecondsBuckets);
  step_sequences_ = &r.histogram("ds4d_batch_sequences", "Sessions in each engine step (the batch size).",
                                 {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 64});
  step_rows_ =
      &r.counter("ds4d_step_rows_total", "Token rows run in engine steps, by kind: decode, verify, prefill.", {"kind"});
  rejections_ =
      &r.counter("ds4d_rejected_requests_total", "Generation requests refused before running, by reason.", {"reason"});
  contract_violations_ =
      &r.counter("ds4d_contract_violations_total", "Requests whose history broke an echo contract, by kind and mode.",
                 {"kind", "mode"});
  cache_outcomes_ = &r.counter("ds4d_prefix_cache_total", "Prefix reuse outcome of each generation.", {"outcome"});
  checkpoint_events_ =
      &r.counter("ds4d_kv_checkpoint_events_total",
                 "KV checkpoint writes, reads, evictions, rejections and removals, by reason.", {"event", "reason"});
  checkpoint_bytes_ =
      &r.counter("ds4d_kv_checkpoint_bytes_total", "Bytes of KV checkpoint files, by event.", {"event"});
  kv_entries_ = &r.gauge("ds4d_kv_cache_entries", "Restore points held, by level (warm: RAM, disk).", {"level"});
  kv_bytes_ = &r.gauge("ds4d_kv_cache_bytes", "Bytes of restore points held, by level (warm: RAM, disk).", {"level"});
  mem_available_ = &r.gauge("ds4d_host_mem_available_bytes", "MemAvailable from /proc/meminfo.");
  memory_floor_ = &r.gauge("ds4d_memory_floor_bytes", "MemAvailable below which new work is refused.");
  psi_some_ = &r.gauge("ds4d_psi_memory_some_avg10_ratio", "Memory pressure stall (some), 10 s average, 0-1.");
  psi_full_ = &r.gauge("ds4d_psi_memory_full_avg10_ratio", "Memory pressure stall (full), 10 s average, 0-1.");
  load_progress_ = &r.gauge("ds4d_model_load_progress_ratio", "Model load progress, 0-1.");
  model_loaded_ = &r.gauge("ds4d_model_loaded", "1 when the model is loaded and serving.");
  speculation_ = &r.counter("ds4d_speculative_tokens_total",
                            "Speculative decoding drafts, by outcome: drafted, accepted, rejected.", {"outcome"});
}

void Metrics::count_request(std::string_view endpoint, int status) {
  requests_->add({std::string(endpoint), std::to_string(status)}, 1);
}
void Metrics::observe_request_duration(std::string_view endpoint, double seconds) {
  request_duration_->observe({std::string(endpoint)}, seconds);
}
void Metrics::add_tokens(long prompt, long completion, long cached) {
  prompt_tokens_->add({}, static_cast<double>(prompt));
  completion_tokens_->add({}, static_cast<double>(completion));
  cached_tokens_->add({}, static_cast<double>(cached));
}
void Metrics::observe_prefill(long tokens, double seconds) {
  prefill_seconds_->add({}, seconds);
  if (tokens > 0 && seconds > 0) prefill_throughput_->observe({}, static_cast<double>(tokens) / seconds);
}
void Metrics::observe_decode(long tokens, double seconds) {
  decode_seconds_->add({}, seconds);
  if (tokens > 0 && seconds > 0) decode_throughput_->observe({}, static_cast<double>(tokens) / seconds);
}
void Metrics::observe_time_to_first_token(double seconds) { ttft_->observe({}, seconds); }
void Metrics::set_queue_depth(long jobs) { queue_depth_->set({}, static_cast<double>(jobs)); }
void Metrics::set_requests_running(long jobs) { running_->set({}, static_cast<double>(jobs)); }
void Metrics::observe_queue_wait(double seconds) { queue_wait_->observe({}, seconds); }
void Metrics::observe_step(long sequences, long decode_rows, long verify_rows, long prefill_rows) {
  step_sequences_->observe({}, static_cast<double>(sequences));
  if (decode_rows > 0) step_rows_->add({"decode"}, static_cast<double>(decode_rows));
  if (verify_rows > 0) step_rows_->add({"verify"}, static_cast<double>(verify_rows));
  if (prefill_rows > 0) step_rows_->add({"prefill"}, static_cast<double>(prefill_rows));
}
void Metrics::add_speculation(long drafted, long accepted) {
  if (drafted <= 0) return;
  speculation_->add({"drafted"}, static_cast<double>(drafted));
  speculation_->add({"accepted"}, static_cast<double>(accepted));
  speculation_->add({"rejected"}, static_cast<double>(drafted - accepted));
}
void Metrics::count_rejection(std::string_view reason) { rejections_->add({std::string(reason)}, 1); }
void Metrics::count_contract_violation(std::string_view kind, std::string_view mode) {
  contract_violations_->add({std::string(kind), std::string(mode)}, 1);
}
void Metrics::count_cache_outcome(std::string_view outcome) { cache_outcomes_->add({std::string(outcome)}, 1); }
void Metrics::count_checkpoint_event(std::string_view event, std::string_view reason, double bytes) {
  checkpoint_events_->add({std::string(event), std::string(reason)}, 1);
  if (bytes > 0) checkpoint_bytes_->add({std::string(event)}, bytes);
}
void Metrics::set_kv_cache_usage(std::string_view level, double entries, double bytes) {
  kv_entries_->set({std::string(level)}, entries);
  kv_bytes_->set({std::string(level)}, bytes);
}
void Metrics::set_mem_available_bytes(double bytes) { mem_available_->set({}, bytes); }
void Metrics::set_memory_floor_bytes(double bytes) { memory_floor_->set({}, bytes); }
void Metrics::set_psi_memory_some_avg10_ratio(double ratio) { psi_some_->set({}, ratio); }
void Metrics::set_psi_memory_full_avg10_ratio(double ratio) { psi_full_->set({}, ratio); }
void Metrics::set_load_progress_ratio(double ratio) { load_progress_->set({}, ratio); }
void Metrics::set_model_loaded(bool loaded) { model_loaded_->set({}, loaded ? 1 : 0); }

}  // namespace ds4::serving
