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
  std::vector<serving::Token> model_draft(serving::Token next, size_t k) override {
    return std::vector<serving::Token>(k, next);  // the MTP block's drafts
  }
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
  // Records the steps it is given (the engine runs each as one forward pass).
  void step(std::span<serving::StepEntry> entries) override {
    std::vector<const serving::EngineSequence*> seqs;
    for (auto& e : entries) seqs.push_back(e.sequence);
    steps.push_back(seqs);
    serving::EngineBackend::step(entries);
  }
  FakeSequence* last = nullptr;
  std::vector<std::vector<const serving::EngineSequence*>> steps;
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

// The batched worker's steps reach the engine as one step over the engine's own sequences (the
// decorator used to fall back to the default, one append per entry, so the daemon never batched).
TEST(HeartbeatBackend, ForwardsABatchedStepAsOneEngineCall) {
  auto inner = std::make_shared<FakeBackend>();
  auto heartbeat = std::make_shared<WorkerHeartbeat>();
  auto wrapped = with_heartbeat(inner, heartbeat);
  auto a = wrapped->new_sequence();
  FakeSequence* inner_a = inner->last;
  auto b = wrapped->new_sequence();
  FakeSequence* inner_b = inner->last;
  const std::vector<serving::Token> one = {1}, three = {1, 0, 1};
  std::vector<serving::StepEntry> entries(2);
  entries[0].sequence = a.get();
  entries[0].tokens = one;
  entries[1].sequence = b.get();
  entries[1].tokens = three;
  entries[1].all_logits = true;
  const uint64_t before = heartbeat->calls();
  wrapped->step(entries);
  ASSERT_EQ(inner->steps.size(), 1u);
  EXPECT_EQ(inner->steps[0], (std::vector<const serving::EngineSequence*>{inner_a, inner_b}));
  EXPECT_EQ(a->tokens(), one);
  EXPECT_EQ(b->tokens(), three);
  EXPECT_EQ(entries[1].row_logits.size(), 3u);
  EXPECT_FALSE(entries[0].error);
  EXPECT_EQ(heartbeat->calls(), before + 1);
}

// An MTP drafter drafts through the sequence (the decorator used to leave model_draft at the
// base class's "no draft head", so the daemon never drafted with an MTP block).
TEST(HeartbeatBackend, ForwardsTheModelsDraftHead) {
  auto inner = std::make_shared<FakeBackend>();
  auto heartbeat = std::make_shared<WorkerHeartbeat>();
  auto wrapped = with_heartbeat(inner, heartbeat);
  auto seq = wrapped->new_sequence();
  const uint64_t before = heartbeat->calls();
  EXPECT_EQ(seq->model_draft(1, 3), (std::vector<serving::Token>{1, 1, 1}));
  EXPECT_EQ(heartbeat->calls(), before + 1);
}

}  // namespace
}  // namespace ds4::daemon
