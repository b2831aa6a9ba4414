#pragma once
// ForwardingSequence: an EngineSequence that passes every call to another one. Decorators
// (the daemon's heartbeat, the batched worker's BatchedSequence) derive from it and override only
// what they add to, so an operation added to EngineSequence reaches the engine through every
// decorator at once: each of them once forgot one (rollback_room, step, model_draft), and the
// daemon then silently served without rollback, batching or an MTP drafter.
#include "gateway/serving/engine_backend.hpp"

namespace ds4::serving {

class ForwardingSequence : public EngineSequence {
 public:
  explicit ForwardingSequence(EngineSequence& inner) : inner_(inner) {}

  const std::vector<Token>& tokens() const override { return inner_.tokens(); }
  size_t capacity() const override { return inner_.capacity(); }
  void clear() override { inner_.clear(); }
  void append(std::span<const Token> tokens) override { inner_.append(tokens); }
  std::span<const float> logits() const override { return inner_.logits(); }
  std::vector<std::vector<float>> verify(std::span<const Token> tokens) override { return inner_.verify(tokens); }
  size_t truncate_floor() const override { return inner_.truncate_floor(); }
  size_t rollback_room() const override { return inner_.rollback_room(); }
  void truncate(size_t n) override { inner_.truncate(n); }
  std::vector<Token> model_draft(Token next, size_t k) override { return inner_.model_draft(next, k); }
  std::vector<uint8_t> snapshot() const override { return inner_.snapshot(); }
  void restore(std::span<const uint8_t> state) override { inner_.restore(state); }

  EngineSequence& inner() { return inner_; }

 private:
  EngineSequence& inner_;
};

}  // namespace ds4::serving
