#pragma once
// StepBatcher: continuous batching of the sessions the worker runs at once.
//
// Concurrency model: every running session has its own thread, which drives its turn exactly as
// a lone worker would (prefix reuse, prefill, token choice, speculation, restore points) on a
// BatchedSequence. Only append() and verify() compute; they hand their tokens to the batcher and
// block. A step runs when every engaged session is waiting (or the stragglers' short grace has
// passed); the thread that completes the set leads it: it takes decode and verify rows first,
// then prefill tokens up to a budget, runs them in one EngineBackend::step, and wakes the
// others. A prefill longer than its share stays queued for the next steps, so a long prompt is
// prefilled in slices between everyone else's decode steps. Which sessions share a step never
// changes a bit of anyone's logits (the engine guarantees it), so none of this timing shows in
// the output. docs/batching.md §scheduler.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "gateway/serving/engine_backend.hpp"
#include "gateway/serving/forwarding_sequence.hpp"

namespace ds4::serving {

struct StepBatcherConfig {
  size_t max_rows = 512;  // tokens in one step (prefill slices are cut to fit)
  // Prefill tokens a step takes while other sessions decode in it, at most; within that, as many
  // as keep the step within latency_ratio times a step of decode rows alone (measured as the
  // steps run), so a prompt arriving slows everyone else's next token by that much at most.
  size_t prefill_rows_beside_decode = 64;
  double latency_ratio = 3.0;
  // How long a step waits for engaged sessions that are not waiting yet (sampling, stop
  // strings): this fraction of the last step's time, at least min_grace.
  double grace_fraction = 0.25;
  std::chrono::microseconds min_grace{200};
};

// What one step ran, for the metrics.
struct StepRecord {
  size_t sequences = 0;
  size_t decode_rows = 0, verify_rows = 0, prefill_rows = 0;
  double seconds = 0;
};

class BatchedSequence;

class StepBatcher {
 public:
  using Observer = std::function<void(const StepRecord&)>;
  // `backend` runs the steps and must outlive the batcher; `observer` hears every step (on the
  // thread that led it).
  StepBatcher(EngineBackend& backend, StepBatcherConfig config, Observer observer = {});
  StepBatcher(const StepBatcher&) = delete;
  StepBatcher& operator=(const StepBatcher&) = delete;

  // A sequence whose append() and verify() run in this batcher's steps and whose other methods
  // are `inner`'s. The caller owns it; `inner` and the batcher must outlive it.
  std::unique_ptr<BatchedSequence> wrap(EngineSequence& inner);

  // Sessions engaged now (in a turn's prefill or decode).
  size_t engaged() const;

 private:
  friend class BatchedSequence;
  struct Request;
  // Blocks until the request ran (its own thread may lead steps meanwhile); rethrows its error.
  void submit(BatchedSequence& seq, Request& request);
  void disengage(BatchedSequence& seq);
  bool ready(std::chrono::steady_clock::time_point now) const;  // mu_ held
  std::chrono::steady_clock::duration grace() const;            // mu_ held: stragglers' wait
  void lead(std::unique_lock<std::mutex>& lock);
  size_t prefill_budget_beside_decode() const;  // mu_ held
  void learn(const StepRecord& record);         // mu_ held

  EngineBackend& backend_;
  const StepBatcherConfig config_;
  Observer observer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request*> pending_;  // arrival order
  size_t engaged_ = 0;
  bool stepping_ = false;
  std::chrono::steady_clock::time_point waiting_since_;  // of the oldest pending request
  std::chrono::steady_clock::duration last_step_{};
  // Running averages of a decode-only step and of one prefill token's share of a step (seconds).
  double decode_step_s_ = 0, prefill_token_s_ = 0;
};

// An EngineSequence whose computing calls go through a StepBatcher. One thread at a time.
class BatchedSequence final : public ForwardingSequence {
 public:
  BatchedSequence(StepBatcher& batcher, EngineSequence& inner) : ForwardingSequence(inner), batcher_(batcher) {}
  ~BatchedSequence() override { idle(); }
  BatchedSequence(const BatchedSequence&) = delete;
  BatchedSequence& operator=(const BatchedSequence&) = delete;

  void append(std::span<const Token> tokens) override;
  std::vector<std::vector<float>> verify(std::span<const Token> tokens) override;
  // Drafting is work of this session alone (an MTP block's forward): steps do not wait for it.
  std::vector<Token> model_draft(Token next, size_t k) override {
    idle();
    return ForwardingSequence::model_draft(next, k);
  }

  // Steps stop waiting for this sequence until its next append() or verify(): call it before
  // anything slow between them (a checkpoint write) and when the turn ends.
  void idle() { batcher_.disengage(*this); }

 private:
  friend class StepBatcher;
  StepBatcher& batcher_;
  bool engaged_ = false;  // guarded by the batcher's mutex
};

}  // namespace ds4::serving
