// Contract store: lookups, LRU byte bound, replacement, thread safety, checkpoint image
// round trip and rejection of every corrupted or truncated image.
#include "gateway/protocol/contract_store.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace ds4::protocol {
namespace {

TurnContract turn(int n, size_t payload = 10) {
  TurnContract t;
  t.fingerprint = turn_fingerprint(static_cast<uint64_t>(n), "content " + std::to_string(n));
  t.reasoning = std::string(payload, 'r');
  t.content = "content " + std::to_string(n);
  t.dsml_block = "\n\n<｜DSML｜tool_calls>" + std::to_string(n) + "</｜DSML｜tool_calls>";
  t.calls = {{"call_a" + std::to_string(n), "f", "{\"n\":" + std::to_string(n) + "}"},
             {"call_b" + std::to_string(n), "g", "{}"}};
  return t;
}

TEST(ContractStore, FindsByIdAndFingerprint) {
  ContractStore store;
  store.remember(turn(1));
  auto by_id = store.find_by_tool_call_id("call_b1");
  ASSERT_TRUE(by_id);
  EXPECT_EQ(by_id->content, "content 1");
  auto by_fp = store.find_by_fingerprint(turn(1).fingerprint);
  ASSERT_TRUE(by_fp);
  EXPECT_EQ(by_fp->dsml_block, turn(1).dsml_block);
  EXPECT_FALSE(store.find_by_tool_call_id("call_zz"));
  EXPECT_FALSE(store.find_by_fingerprint(12345));
}

TEST(ContractStore, ByteBoundEvictsLeastRecentlyUsed) {
  const size_t one = [] {
    ContractStore s;
    s.remember(turn(0, 1000));
    return s.bytes();
  }();
  ASSERT_GT(one, 1000u);
  ContractStore store(one * 3 + one / 2);  // room for three turns
  for (int i = 0; i < 3; ++i) store.remember(turn(i, 1000));
  EXPECT_EQ(store.size(), 3u);
  ASSERT_TRUE(store.find_by_tool_call_id("call_a0"));  // touch 0: now 1 is the oldest
  store.remember(turn(3, 1000));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_LE(store.bytes(), store.max_bytes());
  EXPECT_TRUE(store.find_by_tool_call_id("call_a0"));
  EXPECT_FALSE(store.find_by_tool_call_id("call_a1"));
  EXPECT_FALSE(store.find_by_tool_call_id("call_b1"));
  EXPECT_FALSE(store.find_by_fingerprint(turn(1).fingerprint));
  EXPECT_TRUE(store.find_by_tool_call_id("call_b3"));
  for (int i = 4; i < 100; ++i) {
    store.remember(turn(i, 1000));
    ASSERT_LE(store.bytes(), store.max_bytes());
  }
  EXPECT_EQ(store.size(), 3u);
}

TEST(ContractStore, TurnLargerThanBudgetIsNotStored) {
  ContractStore store(500);
  store.remember(turn(1, 10000));
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ContractStore, ReusedIdReplacesOlderTurn) {
  ContractStore store;
  store.remember(turn(1));
  TurnContract again = turn(2);
  again.calls[0].id = "call_a1";
  store.remember(again);
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.find_by_tool_call_id("call_a1")->content, "content 2");
  EXPECT_FALSE(store.find_by_tool_call_id("call_b1"));
}

TEST(ContractStore, SerializeRoundTripKeepsTurnsAndOrder) {
  ContractStore store;
  for (int i = 0; i < 5; ++i) store.remember(turn(i));
  TurnContract no_reasoning = turn(9);
  no_reasoning.reasoning.reset();
  store.remember(no_reasoning);
  store.find_by_tool_call_id("call_a0");  // 0 is now most recent
  std::string image = store.serialize();

  ContractStore copy;
  copy.deserialize(image);
  EXPECT_EQ(copy.size(), store.size());
  EXPECT_EQ(copy.bytes(), store.bytes());
  EXPECT_EQ(copy.serialize(), image);
  auto t9 = copy.find_by_tool_call_id("call_b9");
  ASSERT_TRUE(t9);
  EXPECT_FALSE(t9->reasoning);
  auto t3 = copy.find_by_fingerprint(turn(3).fingerprint);
  ASSERT_TRUE(t3);
  EXPECT_EQ(*t3->reasoning, *turn(3).reasoning);
  EXPECT_EQ(t3->calls[0].arguments_json, "{\"n\":3}");

  // LRU order survived: in a smaller store, the least recent turns go first.
  ContractStore small(store.bytes() / 2);
  small.deserialize(image);
  EXPECT_TRUE(small.find_by_tool_call_id("call_a0"));
  EXPECT_FALSE(small.find_by_tool_call_id("call_a1"));
}

TEST(ContractStore, RejectsEveryCorruptionAndTruncationAndStaysUnchanged) {
  ContractStore source;
  source.remember(turn(1));
  source.remember(turn(2));
  const std::string image = source.serialize();

  ContractStore target;
  target.remember(turn(7));
  const std::string before = target.serialize();
  for (size_t i = 0; i < image.size(); ++i) {
    std::string bad = image;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_THROW(target.deserialize(bad), ContractStoreError) << "flip at " << i;
  }
  for (size_t n = 0; n < image.size(); ++n)
    EXPECT_THROW(target.deserialize(std::string_view(image).substr(0, n)), ContractStoreError) << "length " << n;
  EXPECT_THROW(target.deserialize(image + "x"), ContractStoreError);
  EXPECT_EQ(target.serialize(), before);
}

TEST(ContractStore, RejectsUnknownVersionEvenWithValidChecksum) {
  ContractStore source;
  source.remember(turn(1));
  std::string image = source.serialize();
  image[8] = 3;  // version field follows the 8-byte magic
  image.resize(image.size() - 8);
  uint64_t sum = fnv1a64(image);
  for (int i = 0; i < 8; ++i) image.push_back(static_cast<char>((sum >> (8 * i)) & 0xFF));
  try {
    ContractStore().deserialize(image);
    FAIL() << "accepted version 3";
  } catch (const ContractStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("version"), std::string::npos);
  }
}

// Turns are placed in the token stream when their generation finishes; serialize_if keeps the
// placed turns a checkpoint's tokens contain, and the placement survives the image round trip.
TEST(ContractStore, PlacedTurnsSelectAndRoundTrip) {
  ContractStore store;
  store.remember(turn(1));
  const uint64_t noted = store.remembered();
  store.remember(turn(2));
  store.remember(turn(3));
  store.place_new_turns(noted, 100, 0xabc);  // turns 2 and 3 end at token 100
  store.place_new_turns(0, 50, 0xdef);       // turn 1 only: 2 and 3 are placed already
  store.remember(turn(4));                   // never placed: in no checkpoint's image

  ContractStore at100;
  at100.deserialize(store.serialize_if([](uint64_t n, uint64_t h) { return n == 100 && h == 0xabc; }));
  EXPECT_EQ(at100.size(), 2u);
  EXPECT_TRUE(at100.find_by_tool_call_id("call_a2"));
  EXPECT_TRUE(at100.find_by_tool_call_id("call_a3"));
  EXPECT_FALSE(at100.find_by_tool_call_id("call_a1"));
  ContractStore at50;
  at50.deserialize(store.serialize_if([](uint64_t n, uint64_t) { return n == 50; }));
  ASSERT_EQ(at50.size(), 1u);
  EXPECT_EQ(at50.find_by_tool_call_id("call_a1")->end_hash, 0xdefu);
  ContractStore none;
  none.deserialize(store.serialize_if([](uint64_t, uint64_t) { return true; }));
  EXPECT_EQ(none.size(), 3u);  // turn 4 was never placed
  EXPECT_FALSE(none.find_by_tool_call_id("call_a4"));
  // A merged (restored) turn keeps its place, so the next checkpoint carries it again.
  ContractStore restored;
  restored.merge(store.serialize_if([](uint64_t n, uint64_t) { return n == 100; }));
  restored.place_new_turns(0, 7, 7);
  EXPECT_EQ(restored.find_by_tool_call_id("call_b3")->end_tokens, 100u);
}

TEST(ContractStore, ReadsVersionOneImagesAsUnplacedTurns) {
  ContractStore source;
  TurnContract t = turn(5);
  t.calls.resize(1);
  source.remember(t);
  std::string image = source.serialize();
  image.resize(image.size() - 8 - 16);  // drop the checksum and the version 2 placement fields
  image[8] = 1;
  const uint64_t sum = fnv1a64(image);
  for (int i = 0; i < 8; ++i) image.push_back(static_cast<char>((sum >> (8 * i)) & 0xFF));
  ContractStore back;
  back.deserialize(image);
  ASSERT_TRUE(back.find_by_tool_call_id("call_a5"));
  EXPECT_EQ(back.find_by_tool_call_id("call_a5")->end_tokens, 0u);
}

TEST(ContractStore, ConcurrentUseKeepsTheBound) {
  ContractStore store(20000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 500; ++i) {
        store.remember(turn(t * 1000 + i, 50));
        store.find_by_tool_call_id("call_a" + std::to_string(t * 1000 + i / 2));
        store.find_by_fingerprint(turn(t * 1000 + i / 3).fingerprint);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(store.bytes(), store.max_bytes());
  EXPECT_GT(store.size(), 0u);
  ContractStore copy(20000);
  copy.deserialize(store.serialize());
  EXPECT_EQ(copy.size(), store.size());
}

TEST(ContractStore, MakeTurnContractKeepsOnlyCompleteBlocks) {
  ParsedMessage m;
  m.reasoning = "r";
  m.content = "c";
  m.calls = {{"call_1", "f", "{}", true, "<invoke>"}};
  m.dsml_block = "\n\nblock";
  m.status = ToolCallsStatus::Complete;
  TurnContract t = make_turn_contract(42, m);
  EXPECT_EQ(t.fingerprint, turn_fingerprint(42, "c"));
  EXPECT_EQ(t.dsml_block, "\n\nblock");
  ASSERT_EQ(t.calls.size(), 1u);
  m.status = ToolCallsStatus::Unterminated;
  t = make_turn_contract(42, m);
  EXPECT_TRUE(t.calls.empty());
  EXPECT_TRUE(t.dsml_block.empty());
  EXPECT_EQ(*t.reasoning, "r");
}

TEST(ContractStore, ModeNames) {
  EXPECT_EQ(parse_contract_mode("strict"), ContractMode::Strict);
  EXPECT_EQ(parse_contract_mode("warn"), ContractMode::Warn);
  EXPECT_EQ(parse_contract_mode("off"), ContractMode::Off);
  EXPECT_FALSE(parse_contract_mode("loose"));
  EXPECT_STREQ(violation_kind_name(ViolationKind::ArgumentsChanged), "arguments_changed");
}

}  // namespace
}  // namespace ds4::protocol
