// Forming steps out of the waiting sessions' tokens and leading them; see step_batcher.hpp.
#include "gateway/serving/step_batcher.hpp"

#include <algorithm>

namespace ds4::serving {

using Clock = std::chrono::steady_clock;

struct StepBatcher::Request {
  BatchedSequence* sequence = nullptr;
  std::span<const Token> tokens;
  bool all_logits = false;
  size_t done = 0;  // tokens already run (a prefill sliced across steps)
  bool finished = false;
  std::exception_ptr error;
  std::vector<std::vector<float>> row_logits;
  // A prefill: many tokens, only the last one's logits wanted. The rest (decode, verify) are
  // rows someone is waiting on for their next token.
  bool prefill() const { return !all_logits && tokens.size() > 1; }
};

StepBatcher::StepBatcher(EngineBackend& backend, StepBatcherConfig config, Observer observer)
    : backend_(backend), config_(config), observer_(std::move(observer)) {
  if (config_.max_rows == 0) throw std::invalid_argument("StepBatcher: max_rows must be at least 1");
}

std::unique_ptr<BatchedSequence> StepBatcher::wrap(EngineSequence& inner) {
  return std::make_unique<BatchedSequence>(*this, inner);
}

size_t StepBatcher::engaged() const {
  std::lock_guard lock(mu_);
  return engaged_;
}

void StepBatcher::disengage(BatchedSequence& seq) {
  {
    std::lock_guard lock(mu_);
    if (!seq.engaged_) return;
    seq.engaged_ = false;
    engaged_--;
  }
  cv_.notify_all();  // a step waiting for this one may go now
}

bool StepBatcher::ready(Clock::time_point now) const {
  if (stepping_ || pending_.empty()) return false;
  // Each engaged sequence has at most one request (its thread blocks in it).
  if (pending_.size() >= engaged_) return true;
  return now >= waiting_since_ + grace();
}

Clock::duration StepBatcher::grace() const {
  return std::max<Clock::duration>(config_.min_grace,
                                   std::chrono::duration_cast<Clock::duration>(last_step_ * config_.grace_fraction));
}

void StepBatcher::submit(BatchedSequence& seq, Request& request) {
  std::unique_lock lock(mu_);
  if (!seq.engaged_) {
    seq.engaged_ = true;
    engaged_++;
  }
  if (pending_.empty()) waiting_since_ = Clock::now();
  pending_.push_back(&request);
  cv_.notify_all();  // a thread holding back for stragglers may have everyone now
  while (!request.finished) {
    const auto now = Clock::now();
    if (ready(now)) {
      lead(lock);
      continue;
    }
    if (stepping_ || pending_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, waiting_since_ + grace());
    }
  }
  if (request.error) std::rethrow_exception(request.error);
}

void StepBatcher::lead(std::unique_lock<std::mutex>& lock) {
  stepping_ = true;
  // Decode and verify rows first (someone waits on each for a token), in arrival order; then
  // prefill tokens, oldest prompt first, within the budget. A request too big for any step
  // alone runs alone (the backend takes any size for one sequence).
  struct Taken {
    Request* request;
    size_t n;
  };
  std::vector<Taken> taken;
  size_t rows = 0;
  StepRecord record;
  for (Request* r : pending_) {
    if (r->prefill()) continue;
    const size_t n = r->tokens.size();
    if (rows + n > config_.max_rows && !(taken.empty() && n > config_.max_rows)) continue;
    taken.push_back({r, n});
    rows += n;
    (r->all_logits ? record.verify_rows : record.decode_rows) += n;
    if (rows >= config_.max_rows) break;
  }
  size_t budget = config_.max_rows > rows ? config_.max_rows - rows : 0;
  if (!taken.empty()) budget = std::min(budget, prefill_budget_beside_decode());
  for (Request* r : pending_) {
    if (!r->prefill() || budget == 0) continue;
    const size_t n = std::min(r->tokens.size() - r->done, budget);
    taken.push_back({r, n});
    budget -= n;
    record.prefill_rows += n;
  }
  if (taken.empty()) {  // a budget of 0 beside no decode rows: still make progress
    Request* r = pending_.front();
    taken.push_back({r, r->tokens.size() - r->done});
    record.prefill_rows += taken.back().n;
  }
  record.sequences = taken.size();
  lock.unlock();

  std::vector<StepEntry> entries(taken.size());
  for (size_t i = 0; i < taken.size(); i++) {
    Request& r = *taken[i].request;
    entries[i].sequence = &r.sequence->inner();
    entries[i].tokens = r.tokens.subspan(r.done, taken[i].n);
    entries[i].all_logits = r.all_logits;
  }
  const auto start = Clock::now();
  try {
    backend_.step(entries);
  } catch (...) {  // the backend records failures per entry; anything else fails them all
    for (StepEntry& e : entries)
      if (!e.error) e.error = std::current_exception();
  }
  const auto took = Clock::now() - start;
  record.seconds = std::chrono::duration<double>(took).count();
  if (observer_) observer_(record);

  lock.lock();
  for (size_t i = 0; i < taken.size(); i++) {
    Request& r = *taken[i].request;
    r.done += taken[i].n;
    if (entries[i].error) r.error = entries[i].error;
    if (r.error || r.done == r.tokens.size()) {
      r.finished = true;
      r.row_logits = std::move(entries[i].row_logits);
      pending_.erase(std::find(pending_.begin(), pending_.end(), &r));
    }
  }
  last_step_ = took;
  learn(record);
  waiting_since_ = Clock::now();  // those left over (slices, what did not fit) go next
  stepping_ = false;
  cv_.notify_all();
}

size_t StepBatcher::prefill_budget_beside_decode() const {
  const size_t cap = config_.prefill_rows_beside_decode;
  if (decode_step_s_ <= 0 || prefill_token_s_ <= 0) return cap;  // nothing measured yet
  const double room = (config_.latency_ratio - 1.0) * decode_step_s_ / prefill_token_s_;
  return std::clamp<size_t>(static_cast<size_t>(room), 1, std::max<size_t>(cap, 1));
}

void StepBatcher::learn(const StepRecord& r) {
  constexpr double kWeight = 0.2;  // of the newest step in the running averages
  auto blend = [](double& avg, double x) { avg = avg > 0 ? avg + kWeight * (x - avg) : x; };
  const size_t rows = r.decode_rows + r.verify_rows;
  if (r.prefill_rows == 0 && rows > 0) blend(decode_step_s_, r.seconds);
  if (r.prefill_rows > 0) {
    const double decode_part = rows > 0 ? decode_step_s_ : 0;
    blend(prefill_token_s_, std::max(r.seconds - decode_part, 0.0) / double(r.prefill_rows));
  }
}

void BatchedSequence::append(std::span<const Token> tokens) {
  if (tokens.empty()) return;
  StepBatcher::Request r;
  r.sequence = this;
  r.tokens = tokens;
  batcher_.submit(*this, r);
}

std::vector<std::vector<float>> BatchedSequence::verify(std::span<const Token> tokens) {
  if (tokens.empty()) return {};
  StepBatcher::Request r;
  r.sequence = this;
  r.tokens = tokens;
  r.all_logits = true;
  batcher_.submit(*this, r);
  return std::move(r.row_logits);
}

}  // namespace ds4::serving
