// Heartbeat-reporting engine decorator; see heartbeat_backend.hpp.
#include "daemon/heartbeat_backend.hpp"

#include <vector>

#include "gateway/serving/forwarding_sequence.hpp"

namespace ds4::daemon {
namespace {

class CallGuard {
 public:
  explicit CallGuard(WorkerHeartbeat& h) : h_(h), call_(h_.begin_call()) {}
  ~CallGuard() { h_.end_call(call_); }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

 private:
  WorkerHeartbeat& h_;
  WorkerHeartbeat::Call call_;
};

// The computing calls (and snapshot/restore, as long as a prefill chunk) count as engine calls;
// everything else passes through ForwardingSequence.
class HeartbeatSequence final : public serving::ForwardingSequence {
 public:
  HeartbeatSequence(std::unique_ptr<serving::EngineSequence> inner, std::shared_ptr<WorkerHeartbeat> h)
      : ForwardingSequence(*inner), owned_(std::move(inner)), h_(std::move(h)) {}
  void clear() override {
    CallGuard g(*h_);
    ForwardingSequence::clear();
  }
  void append(std::span<const serving::Token> tokens) override {
    CallGuard g(*h_);
    ForwardingSequence::append(tokens);
  }
  std::vector<std::vector<float>> verify(std::span<const serving::Token> tokens) override {
    CallGuard g(*h_);
    return ForwardingSequence::verify(tokens);
  }
  void truncate(size_t n) override {
    CallGuard g(*h_);
    ForwardingSequence::truncate(n);
  }
  std::vector<serving::Token> model_draft(serving::Token next, size_t k) override {
    CallGuard g(*h_);
    return ForwardingSequence::model_draft(next, k);
  }
  std::vector<uint8_t> snapshot() const override {
    CallGuard g(*h_);
    return ForwardingSequence::snapshot();
  }
  void restore(std::span<const uint8_t> state) override {
    CallGuard g(*h_);
    ForwardingSequence::restore(state);
  }

 private:
  std::unique_ptr<serving::EngineSequence> owned_;
  std::shared_ptr<WorkerHeartbeat> h_;
};

class HeartbeatBackend final : public serving::EngineBackend {
 public:
  HeartbeatBackend(std::shared_ptr<serving::EngineBackend> inner, std::shared_ptr<WorkerHeartbeat> h)
      : inner_(std::move(inner)), h_(std::move(h)) {}
  std::string model_id() const override { return inner_->model_id(); }
  size_t context_length() const override { return inner_->context_length(); }
  size_t vocab_size() const override { return inner_->vocab_size(); }
  std::vector<serving::Token> encode(std::string_view text) const override { return inner_->encode(text); }
  std::vector<serving::Token> encode_plain(std::string_view text) const override { return inner_->encode_plain(text); }
  std::vector<serving::Token> encode_prompt(std::string_view text,
                                            std::span<const std::pair<size_t, size_t>> plain) const override {
    return inner_->encode_prompt(text, plain);
  }
  std::string decode(std::span<const serving::Token> tokens) const override { return inner_->decode(tokens); }
  std::string token_bytes(serving::Token token) const override { return inner_->token_bytes(token); }
  bool is_end_of_generation(serving::Token token) const override { return inner_->is_end_of_generation(token); }
  uint64_t fingerprint() const override { return inner_->fingerprint(); }
  std::unique_ptr<serving::EngineSequence> new_sequence() override {
    return std::make_unique<HeartbeatSequence>(inner_->new_sequence(), h_);
  }
  // A batched step is one engine call over the inner sequences, so the engine runs it as one
  // forward pass (the default would run the entries one by one).
  void step(std::span<serving::StepEntry> entries) override {
    std::vector<serving::StepEntry> inner(entries.size());
    for (size_t i = 0; i < entries.size(); i++) {
      auto* seq = dynamic_cast<HeartbeatSequence*>(entries[i].sequence);
      if (!seq) return serving::EngineBackend::step(entries);
      inner[i].sequence = &seq->inner();
      inner[i].tokens = entries[i].tokens;
      inner[i].all_logits = entries[i].all_logits;
    }
    {
      CallGuard g(*h_);
      inner_->step(inner);
    }
    for (size_t i = 0; i < entries.size(); i++) {
      entries[i].row_logits = std::move(inner[i].row_logits);
      entries[i].error = inner[i].error;
    }
  }

 private:
  std::shared_ptr<serving::EngineBackend> inner_;
  std::shared_ptr<WorkerHeartbeat> h_;
};

}  // namespace

std::shared_ptr<serving::EngineBackend> with_heartbeat(std::shared_ptr<serving::EngineBackend> inner,
                                                       std::shared_ptr<WorkerHeartbeat> heartbeat) {
  return std::make_shared<HeartbeatBackend>(std::move(inner), std::move(heartbeat));
}

}  // namespace ds4::daemon
