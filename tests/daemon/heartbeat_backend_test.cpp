// The daemon's heartbeat decorator forwards every optional engine operation: the rollback room
// and the wide verify too. It used to leave rollback_room() at the base class's 0, which turned
// off, silently and only in the daemon, the weighing of declared tool names and every
// speculative draft (docs/speculation.md §the-loop).
#include "daemon/heartbeat_backend.hpp"

#include <gtest/gtest.h>

namespace ds4::daemon {
namespace {

class FakeSequence final : public serving::EngineSequence {
 public:
  const std::vector<serving::Token>& tokens() const override { return tokens_; }
  size_t capacity() const override { return 100; }
  void clear() override { tokens_.clear(); }
  void append(std::span<const serving::Token> t) override { tokens_.insert(tokens_.end(), t.begin(), t.end()); }
  std::span<const float> logits() const override { return logits_; }
  size_t rollback_room() const override { return 64; }
  std::vector<std::vector<float>> verify(std::span<const serving::Token> t) override {
    append(t);
    ++verifies;
    return std::vector<std::vector<float>>(t.size(), logits_);
  }
  int verifies = 0;

 private:
  std::vector<serving::Token> tokens_;
  std::vector<float> logits_ = {0.5f, 1.5f};
};

class FakeBackend final : public serving::EngineBackend {
 public:
  std::string model_id() const override { return "fake"; }
  size_t context_length() const override { return 100; }
  size_t vocab_size() const override { return 2; }
  std::vector<serving::Token> encode(std::string_view) const override { return {}; }
  std::vector<serving::Token> encode_plain(std::string_view) const override { return {}; }
  std::vector<serving::Token> encode_prompt(std::string_view,
                                            std::span<const std::pair<size_t, size_t>>) const override {
    return {};
  }
  std::string decode(std::span<const serving::Token>) const override { return {}; }
  std::string token_bytes(serving::Token) const override { return {}; }
  bool is_end_of_generation(serving::Token) const override { return false; }
  std::unique_ptr<serving::EngineSequence> new_sequence() override {
    auto s = std::make_unique<FakeSequence>();
    last = s.get();
    return s;
  }
  FakeSequence* last = nullptr;
};

TEST(HeartbeatBackend, ForwardsRollbackRoomAndVerifyAsEngineCalls) {
  auto inner = std::make_shared<FakeBackend>();
  auto heartbeat = std::make_shared<WorkerHeartbeat>();
  auto wrapped = with_heartbeat(inner, heartbeat);
  auto seq = wrapped->new_sequence();
  EXPECT_EQ(seq->rollback_room(), 64u);
  const uint64_t before = heartbeat->calls();
  const std::vector<serving::Token> row = {1, 0, 1};
  const auto logits = seq->verify(row);
  EXPECT_EQ(inner->last->verifies, 1);  // one wide call, not three appends
  EXPECT_EQ(logits.size(), 3u);
  EXPECT_EQ(seq->tokens(), row);
  EXPECT_EQ(heartbeat->calls(), before + 1);
}

}  // namespace
}  // namespace ds4::daemon
