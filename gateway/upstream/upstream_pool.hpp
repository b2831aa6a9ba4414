#pragma once
// UpstreamPool: gateway mode's JobRunner. Jobs the local gateway rendered and tokenized run on
// upstream engines; what their sinks hear is what a local worker would have told them. Each job's
// route key ranks the nodes by rendezvous hashing (or round robin); a node that fails before the
// prompt is in hands the job to the next, one lost later ends it with FinishReason::Error. A
// health thread polls every node; each job runs on its own thread, and stop() cancels and joins
// them. ds4d nodes speak job_wire.hpp, vLLM and SGLang their completions API (completions_wire).
// Routing, failover and health: docs/scale-out.md §routing, §vllm-and-sglang.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "gateway/upstream/upstream_client.hpp"

namespace ds4::upstream {

enum class Routing { Hash, RoundRobin };

struct PoolConfig {
  std::vector<std::string> urls;  // [vllm+|sglang+]http://HOST:PORT each
  Routing routing = Routing::Hash;
  std::chrono::milliseconds health_interval{1000};
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds health_timeout{2000};
};

// What GET /engine/info said.
struct EngineInfo {
  std::string model_id;
  size_t vocab_size = 0, context_length = 0;
  uint64_t vocab_fingerprint = 0;
};
EngineInfo parse_engine_info(const std::string& body);  // throws std::runtime_error

class UpstreamPool final : public serving::JobRunner {
 public:
  // Throws std::invalid_argument for a malformed or repeated URL, or none.
  UpstreamPool(PoolConfig config, serving::Metrics& metrics);
  ~UpstreamPool() override;

  // The start check: asks every node for /engine/info (vLLM, SGLang: /v1/models) until one
  // answers or `wait` passes, and returns the first answer (for vLLM and SGLang: the served
  // model's name and max_model_len, 0 where not given, and `tokenizer`'s fingerprint: theirs is
  // not known, their POST /tokenize is probed instead, vocab_probe.hpp). Throws std::runtime_error
  // when a node's vocabulary is not `tokenizer`'s (vocab_fingerprint.hpp) or none answered.
  EngineInfo check(std::shared_ptr<const serving::EngineBackend> tokenizer, std::chrono::milliseconds wait);
  // Starts the health checks; `tokenizer` gives the user-turn token for route keys and decodes
  // what vLLM and SGLang nodes sample.
  void start(std::shared_ptr<const serving::EngineBackend> tokenizer);

  std::optional<serving::Refusal> submit(serving::GenerationJob job) override;
  void stop(std::chrono::milliseconds drain) override;
  bool available() const override;
  std::string status_json() const override;

 private:
  struct Node {
    UpstreamUrl url;
    bool up = false, incompatible = false;
    std::string state = "unknown", last_error;
    size_t inflight = 0;
    std::string model;   // vLLM, SGLang: the served model's name (/v1/models)
    size_t context = 0;  // vLLM, SGLang: its max_model_len
    std::string note;    // vLLM, SGLang: why its vocabulary is not checked (no /tokenize)
  };
  struct Running {
    std::shared_ptr<StreamCall> call;
    serving::CancelFlag cancelled;
    std::chrono::steady_clock::time_point deadline;
  };
  void run_job(serving::GenerationJob job);
  // What GET /v1/models of a vLLM or SGLang node says; throws std::runtime_error.
  EngineInfo served_info(size_t node);
  // vLLM, SGLang: the vocabulary probe (vocab_probe.hpp); why the node's vocabulary is not the
  // gateway's, empty when it is or cannot be checked (then its note says so). Throws
  // std::runtime_error when /tokenize fails otherwise.
  std::string vocab_mismatch(size_t node);
  std::vector<size_t> ranking(const std::string& key);
  void mark(size_t node, bool up, std::string state, std::string error = {});
  void health_main();
  void probe(size_t node);

  PoolConfig config_;
  serving::Metrics& metrics_;
  uint64_t fingerprint_ = 0;
  serving::Token user_token_ = -1;
  std::shared_ptr<const serving::EngineBackend> tokenizer_;
  std::vector<serving::Token> end_tokens_;  // sent to vLLM and SGLang as stop_token_ids
  size_t context_ = 0;                      // the gateway's context: for nodes that gave none
  std::vector<std::string> names_;          // node URLs, for ranking
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Node> nodes_;
  std::list<Running> running_;
  size_t jobs_ = 0;  // job threads alive
  size_t next_ = 0;  // round robin
  bool stopping_ = false;
  std::thread health_;
  serving::MetricFamily *up_, *requests_, *inflight_;
};

}  // namespace ds4::upstream
