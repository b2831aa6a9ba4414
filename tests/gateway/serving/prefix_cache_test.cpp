// PrefixCache on its own, on the scripted engine (no Service, no worker): which restore point a
// prompt reuses between the live context, warm sessions and disk checkpoints, spill of evicted
// warm sessions to disk, the shutdown checkpoints, and dropping a restore point that failed.
#include "gateway/serving/prefix_cache.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "tests/gateway/scripted_backend.hpp"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using cache::CheckpointReason;
using serving::CacheOutcome;

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("ds4d-prefix-cache-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A PrefixCache opened on a scripted engine with snapshots, and the worker's live sequence.
struct Fixture {
  serving::Metrics metrics;
  protocol::ContractStore contracts;
  std::shared_ptr<ScriptedBackend> backend = std::make_shared<ScriptedBackend>("Hello there", 4096);
  std::unique_ptr<serving::PrefixCache> cache;
  std::unique_ptr<serving::EngineSequence> seq;

  // hot: the warm budget in bytes; dir empty: no disk checkpoints.
  explicit Fixture(uint64_t hot, const fs::path& dir = {}, size_t rollback = 0) {
    backend->snapshots = true;
    backend->rollback = rollback;
    backend->model_fingerprint = 0xfeed;
    serving::PrefixCacheConfig c;
    c.hot_bytes = hot;
    c.cache_dir = dir;
    c.disk_bytes = dir.empty() ? 0 : 1 << 20;
    c.checkpoint_min_tokens = 1;
    cache = std::make_unique<serving::PrefixCache>(c, metrics, contracts);
    cache->open(*backend);
    seq = backend->new_sequence();
  }
  // The live context becomes exactly `text` (a fresh prefill).
  void live(const std::string& text) {
    cache->clear_live(*seq);
    seq->append(backend->encode(text));
  }
  serving::GenerationUsage reuse(const std::string& prompt) {
    serving::GenerationJob job;
    job.prompt = backend->encode(prompt);
    serving::GenerationUsage usage;
    cache->reuse(*seq, job, usage);
    return usage;
  }
  std::string live_text() const { return backend->decode(seq->tokens()); }
  serving::PrefixCache::Stats stats() {
    cache->publish();
    return cache->stats();
  }
};

// One scripted snapshot of n tokens in RAM: the image (12 + 4n bytes) and the tokens (4n).
constexpr uint64_t warm_bytes(size_t n) { return 12 + 8 * uint64_t(n); }

TEST(PrefixCache, AWarmSessionWinsOverAShorterLiveMatch) {
  Fixture f(1 << 20);
  f.live("shared prefix, first conversation");
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);
  f.live("shared prefix, second");
  const auto u = f.reuse("shared prefix, first conversation goes on");
  EXPECT_EQ(u.cache, CacheOutcome::Warm);
  EXPECT_EQ(u.cached_tokens, std::string("shared prefix, first conversation").size());
  EXPECT_EQ(f.live_text(), "shared prefix, first conversation");
  EXPECT_EQ(f.backend->restores, 1);
  // The replaced live context was kept as a warm session before the switch.
  EXPECT_EQ(f.stats().warm_sessions, 2u);
  EXPECT_EQ(f.reuse("shared prefix, second and more").cache, CacheOutcome::Warm);
}

TEST(PrefixCache, TiesGoToTheLiveContextWithoutARestore) {
  Fixture f(1 << 20);
  f.live("the same conversation");
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);
  const auto u = f.reuse("the same conversation, next turn");
  EXPECT_EQ(u.cache, CacheOutcome::Live);
  EXPECT_EQ(u.cached_tokens, std::string("the same conversation").size());
  EXPECT_EQ(f.backend->restores, 0);
}

TEST(PrefixCache, ADiskCheckpointWinsOverAShorterWarmSessionAndBecomesWarm) {
  TempDir d;
  Fixture f(1 << 20, d.path);
  f.live("a long conversation");
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);  // warm only
  f.live("a long conversation that went on");
  f.cache->keep(*f.seq, CheckpointReason::Interval, true);  // disk only
  EXPECT_EQ(f.stats().warm_sessions, 1u);
  EXPECT_EQ(f.stats().disk_files, 1u);
  f.live("something else entirely");
  const auto u = f.reuse("a long conversation that went on and on");
  EXPECT_EQ(u.cache, CacheOutcome::Disk);
  EXPECT_EQ(u.cached_tokens, std::string("a long conversation that went on").size());
  EXPECT_EQ(f.live_text(), "a long conversation that went on");
  ASSERT_TRUE(f.cache->restored_tokens(*f.seq).has_value());
  EXPECT_EQ(*f.cache->restored_tokens(*f.seq), u.cached_tokens);
  // Restored from disk, it is warm from now on (and the replaced live context too).
  EXPECT_EQ(f.stats().warm_sessions, 3u);
  f.live("unrelated");
  EXPECT_EQ(f.reuse("a long conversation that went on, again").cache, CacheOutcome::Warm);
}

TEST(PrefixCache, NothingSharedIsAMissAndClearsTheLiveContext) {
  Fixture f(1 << 20);
  EXPECT_EQ(f.reuse("first prompt").cache, CacheOutcome::Cold);
  f.live("first prompt and its reply");
  const auto u = f.reuse("zzz");
  EXPECT_EQ(u.cache, CacheOutcome::Miss);
  EXPECT_EQ(u.cached_tokens, 0u);
  EXPECT_TRUE(f.seq->tokens().empty());
  EXPECT_FALSE(f.cache->restored_tokens(*f.seq).has_value());
}

TEST(PrefixCache, WarmSessionsEvictedFromRamSpillToDisk) {
  TempDir d;
  const std::string a = "conversation A!", b = "conversation B!";
  ASSERT_EQ(a.size(), b.size());
  Fixture f(warm_bytes(a.size()) + 8, d.path);  // room for one of them
  f.live(a);
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);
  EXPECT_EQ(f.stats().disk_files, 0u);
  f.live(b);
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);
  const auto s = f.stats();
  EXPECT_EQ(s.warm_sessions, 1u);
  EXPECT_LE(s.warm_bytes, warm_bytes(a.size()) + 8);
  EXPECT_EQ(s.disk_files, 1u);  // A, evicted, went to disk
  f.live("other");
  const auto u = f.reuse(a + " goes on");
  EXPECT_EQ(u.cache, CacheOutcome::Disk);
  EXPECT_EQ(u.cached_tokens, a.size());
}

TEST(PrefixCache, WithoutADiskEvictedWarmSessionsAreGone) {
  const std::string a = "conversation A!", b = "conversation B!";
  Fixture f(warm_bytes(a.size()) + 8);
  f.live(a);
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);
  f.live(b);
  f.cache->keep(*f.seq, CheckpointReason::Turn, false);
  EXPECT_EQ(f.stats().disk_files, 0u);
  f.live("other");
  EXPECT_EQ(f.reuse(a + " goes on").cache, CacheOutcome::Miss);
}

TEST(PrefixCache, ShutdownCheckpointsHoldTheLiveContextAndTheWarmSessionsForTheNextStart) {
  TempDir d;
  {
    Fixture f(1 << 20, d.path);
    f.live("a warm conversation");
    f.cache->keep(*f.seq, CheckpointReason::Turn, false);
    f.live("the live conversation");
    EXPECT_EQ(f.stats().disk_files, 0u);
    f.cache->write_shutdown_checkpoints(std::vector<const serving::EngineSequence*>{f.seq.get()});
    EXPECT_EQ(f.stats().disk_files, 2u);
  }
  Fixture next(1 << 20, d.path);  // a restart on the same directory
  EXPECT_EQ(next.stats().disk_files, 2u);
  for (const std::string p : {"the live conversation", "a warm conversation"}) {
    const auto u = next.reuse(p + std::string(", next turn"));
    EXPECT_EQ(u.cache, CacheOutcome::Disk) << p;
    EXPECT_EQ(u.cached_tokens, p.size()) << p;
  }
}

TEST(PrefixCache, ShutdownWritesNothingWithoutADisk) {
  Fixture f(1 << 20);
  f.live("a conversation");
  f.cache->write_shutdown_checkpoints(std::vector<const serving::EngineSequence*>{f.seq.get()});
  EXPECT_EQ(f.stats().disk_files, 0u);
}

TEST(PrefixCache, ARestorePointThatFailedInTheEngineIsDeletedEverywhere) {
  TempDir d;
  Fixture f(1 << 20, d.path);
  f.live("a conversation that breaks the engine");
  f.cache->keep(*f.seq, CheckpointReason::Cold, true);  // warm and disk
  EXPECT_EQ(f.stats().disk_files, 1u);
  f.live("other");
  ASSERT_EQ(f.reuse("a conversation that breaks the engine, again").cache, CacheOutcome::Warm);
  f.cache->drop_failed_restore(*f.seq);
  EXPECT_TRUE(f.seq->tokens().empty());
  EXPECT_FALSE(f.cache->restored_tokens(*f.seq).has_value());
  EXPECT_EQ(f.stats().disk_files, 0u);
  EXPECT_EQ(f.reuse("a conversation that breaks the engine, again").cache, CacheOutcome::Cold);
}

TEST(PrefixCache, ReuseBeforeOpenIsALogicError) {
  serving::Metrics metrics;
  protocol::ContractStore contracts;
  serving::PrefixCache cache(serving::PrefixCacheConfig{}, metrics, contracts);
  ScriptedBackend backend("x");
  auto seq = backend.new_sequence();
  serving::GenerationJob job;
  job.prompt = backend.encode("p");
  serving::GenerationUsage usage;
  EXPECT_THROW(cache.reuse(*seq, job, usage), std::logic_error);
  EXPECT_EQ(cache.health(), "");
  EXPECT_EQ(cache.stats().disk_files, 0u);
}

}  // namespace
}  // namespace ds4::test
