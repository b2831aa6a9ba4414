#pragma once
// ScriptedBackend: an EngineBackend without a model, for testing the serving and HTTP layers.
//
// Tokens are bytes (ids 0..255) plus EOS (256). After any prompt the "model" answers with a
// fixed reply, byte by byte, then EOS; with `endless` it repeats the reply forever. The logits
// put all weight on the scripted token, so every sampler setting picks it; with `flat_logits`
// every other token is only one logit below it, so only greedy sampling (temperature 0) is
// sure to follow the script. Hooks let a test
// slow decoding down or hold the worker inside append() to fill the queue deterministically.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway/serving/engine_backend.hpp"

namespace ds4::test {

class ScriptedBackend : public serving::EngineBackend {
 public:
  static constexpr serving::Token kEos = 256;

  explicit ScriptedBackend(std::string reply, size_t capacity = 4096) : reply_(std::move(reply)), capacity_(capacity) {}

  std::string model_id() const override { return "scripted"; }
  size_t context_length() const override { return capacity_; }
  size_t vocab_size() const override { return 257; }
  std::vector<serving::Token> encode(std::string_view text) const override {
    std::vector<serving::Token> out;
    for (unsigned char c : text) out.push_back(c);
    return out;
  }
  std::vector<serving::Token> encode_plain(std::string_view text) const override { return encode(text); }
  std::string decode(std::span<const serving::Token> tokens) const override {
    std::string out;
    for (auto t : tokens) out += token_bytes(t);
    return out;
  }
  std::string token_bytes(serving::Token t) const override {
    if (t < 0 || t > kEos) throw std::out_of_range("token id " + std::to_string(t));
    return t == kEos ? std::string() : std::string(1, static_cast<char>(t));
  }
  bool is_end_of_generation(serving::Token t) const override { return t == kEos; }
  std::unique_ptr<serving::EngineSequence> new_sequence() override;

  // Test controls.
  std::atomic<bool> endless{false};
  std::atomic<bool> flat_logits{false};
  std::atomic<int> decode_delay_ms{0};
  std::atomic<long> appended_tokens{0};  // every token ever appended
  std::atomic<long> prefilled_tokens{0}; // tokens appended in multi-token appends
  // While closed, append() blocks (the worker is "busy"); open() releases it.
  void close_gate() {
    std::lock_guard lock(mu_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }
  bool wait_until_blocked(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return blocked_; });
  }

  const std::string reply_;
  const size_t capacity_;

 private:
  friend class ScriptedSequence;
  void pass_gate() {
    std::unique_lock lock(mu_);
    if (gate_open_) return;
    blocked_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return gate_open_; });
    blocked_ = false;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_open_ = true;
  bool blocked_ = false;
};

class ScriptedSequence : public serving::EngineSequence {
 public:
  explicit ScriptedSequence(ScriptedBackend& b) : b_(b), logits_(257, 0.0f) {}
  const std::vector<serving::Token>& tokens() const override { return tokens_; }
  size_t capacity() const override { return b_.capacity_; }
  void clear() override {
    tokens_.clear();
    k_ = 0;
  }
  void append(std::span<const serving::Token> tokens) override {
    b_.pass_gate();
    if (tokens.size() == 1 && b_.decode_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(b_.decode_delay_ms.load()));
    if (tokens_.size() + tokens.size() > capacity()) throw std::length_error("scripted context full");
    // A multi-token append is a prompt: the reply starts over after it. A single token advances
    // the reply only when it is the reply's next byte (the sampled token fed back).
    if (tokens.size() == 1) k_ = (tokens[0] == next()) ? k_ + 1 : 0;
    else k_ = 0;
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    b_.appended_tokens += static_cast<long>(tokens.size());
    if (tokens.size() > 1) b_.prefilled_tokens += static_cast<long>(tokens.size());
  }
  std::span<const float> logits() const override {
    std::fill(logits_.begin(), logits_.end(), b_.flat_logits ? 49.0f : 0.0f);
    logits_[next()] = 50.0f;
    return logits_;
  }

 private:
  serving::Token next() const {
    const std::string& r = b_.reply_;
    if (r.empty()) return ScriptedBackend::kEos;
    if (b_.endless) return static_cast<unsigned char>(r[k_ % r.size()]);
    return k_ < r.size() ? static_cast<unsigned char>(r[k_]) : ScriptedBackend::kEos;
  }
  ScriptedBackend& b_;
  std::vector<serving::Token> tokens_;
  size_t k_ = 0;
  mutable std::vector<float> logits_;
};

inline std::unique_ptr<serving::EngineSequence> ScriptedBackend::new_sequence() {
  return std::make_unique<ScriptedSequence>(*this);
}

}  // namespace ds4::test
