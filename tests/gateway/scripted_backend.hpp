#pragma once
// ScriptedBackend: an EngineBackend without a model, for testing the serving and HTTP layers.
// Tokens are bytes (ids 0..255) plus EOS (256). After any prompt the "model" answers with a fixed
// reply, byte by byte, then EOS (`endless`: forever). The logits put all weight on the scripted
// token; with `flat_logits` every other token is one logit below it, so only greedy sampling is
// sure to follow, and a token off the script restarts the reply (unless keep_position). Hooks slow
// decoding or hold the worker inside append() to fill the queue deterministically. Restore points
// are off by default; `rollback` > 0 lets truncate() take back that many tokens, `snapshots`
// enables snapshot()/restore() (the image: the tokens and the reply position), `poison_restores`
// makes a restored sequence fail at its next append (a checkpoint that breaks the engine).
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
  // With merge_ll, encode() spells "ll" as this one token, while the script samples 'l', 'l':
  // the tokenizer splits the reply's bytes differently from how the model sampled them.
  static constexpr serving::Token kLL = 257;

  explicit ScriptedBackend(std::string reply, size_t capacity = 4096) : reply_(std::move(reply)), capacity_(capacity) {}

  std::string model_id() const override { return "scripted"; }
  size_t context_length() const override { return capacity_; }
  size_t vocab_size() const override { return 257; }
  std::vector<serving::Token> encode(std::string_view text) const override {
    std::vector<serving::Token> out;
    for (size_t i = 0; i < text.size(); i++) {
      if (merge_ll && text.compare(i, 2, "ll") == 0) {
        out.push_back(kLL);
        i++;
      } else {
        out.push_back(static_cast<unsigned char>(text[i]));
      }
    }
    return out;
  }
  std::vector<serving::Token> encode_plain(std::string_view text) const override { return encode(text); }
  // No special tokens here: a prompt is its bytes whatever its client spans.
  std::vector<serving::Token> encode_prompt(std::string_view text,
                                            std::span<const std::pair<size_t, size_t>>) const override {
    return encode(text);
  }
  std::string decode(std::span<const serving::Token> tokens) const override {
    std::string out;
    for (auto t : tokens) out += token_bytes(t);
    return out;
  }
  std::string token_bytes(serving::Token t) const override {
    if (t == kLL) return "ll";
    if (t < 0 || t > kEos) throw std::out_of_range("token id " + std::to_string(t));
    return t == kEos ? std::string() : std::string(1, static_cast<char>(t));
  }
  bool is_end_of_generation(serving::Token t) const override { return t == kEos; }
  uint64_t fingerprint() const override { return model_fingerprint; }
  std::unique_ptr<serving::EngineSequence> new_sequence() override;

  // Restore-point controls (see above).
  size_t rollback = 0;
  bool snapshots = false;
  uint64_t model_fingerprint = 0;
  std::atomic<bool> poison_restores{false};
  std::atomic<long> restores{0};

  // Test controls.
  std::atomic<bool> endless{false};
  std::atomic<bool> merge_ll{false};
  std::atomic<bool> flat_logits{false};
  // A sampled token other than the reply's next byte still advances the reply (a model that
  // goes on with its text when one byte was overruled), instead of starting it over.
  std::atomic<bool> keep_position{false};
  std::atomic<int> decode_delay_ms{0};
  std::atomic<long> appended_tokens{0};   // every token ever appended
  std::atomic<long> prefilled_tokens{0};  // tokens appended in multi-token appends
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
    high_water_ = floor_ = 0;
    poisoned_ = false;
  }
  size_t truncate_floor() const override {
    const size_t ring = high_water_ > b_.rollback ? high_water_ - b_.rollback : 0;
    return std::min(tokens_.size(), std::max(ring, floor_));
  }
  void truncate(size_t n) override {
    if (n > tokens_.size() || n < truncate_floor()) throw std::out_of_range("scripted truncate out of reach");
    if (n == tokens_.size()) return;
    tokens_.resize(n);
    k_ = 0;
  }
  std::vector<uint8_t> snapshot() const override {
    if (!b_.snapshots) return {};
    std::vector<uint8_t> out{'S', 'C', 'R', '1'};
    auto put = [&](uint32_t v) {
      for (int i = 0; i < 4; i++) out.push_back(uint8_t(v >> (8 * i)));
    };
    put(uint32_t(k_));
    put(uint32_t(tokens_.size()));
    for (auto t : tokens_) put(uint32_t(t));
    return out;
  }
  void restore(std::span<const uint8_t> state) override {
    auto get = [&](size_t at) {
      uint32_t v = 0;
      for (int i = 0; i < 4; i++) v |= uint32_t(state[at + i]) << (8 * i);
      return v;
    };
    if (state.size() < 12 || state[0] != 'S' || state[1] != 'C' || state[2] != 'R' || state[3] != '1')
      throw std::runtime_error("not a scripted snapshot");
    const uint32_t n = get(8);
    if (state.size() != 12 + size_t(n) * 4) throw std::runtime_error("scripted snapshot has the wrong size");
    k_ = get(4);
    tokens_.resize(n);
    for (uint32_t i = 0; i < n; i++) tokens_[i] = serving::Token(get(12 + 4 * i));
    high_water_ = floor_ = n;
    poisoned_ = b_.poison_restores.load();
    b_.restores++;
  }
  void append(std::span<const serving::Token> tokens) override {
    b_.pass_gate();
    if (poisoned_) throw std::runtime_error("scripted engine: this restored state is broken");
    if (tokens.size() == 1 && b_.decode_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(b_.decode_delay_ms.load()));
    if (tokens_.size() + tokens.size() > capacity()) throw std::length_error("scripted context full");
    // A multi-token append is a prompt: the reply starts over after it. A single token advances
    // the reply only when it is the reply's next byte (the sampled token fed back).
    if (tokens.size() == 1) k_ = (tokens[0] == next() || b_.keep_position) ? k_ + 1 : 0;
    else k_ = 0;
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    high_water_ = std::max(high_water_, tokens_.size());
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
  size_t high_water_ = 0, floor_ = 0;
  bool poisoned_ = false;
  mutable std::vector<float> logits_;
};

inline std::unique_ptr<serving::EngineSequence> ScriptedBackend::new_sequence() {
  return std::make_unique<ScriptedSequence>(*this);
}

}  // namespace ds4::test
