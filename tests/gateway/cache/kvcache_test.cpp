// The KV checkpoint library on its own: file format checks, crash-safe writes, the directory
// index, longest-prefix lookup, the disk budget and its eviction, failing directories, and the
// RAM store of warm sessions. Regression tests for the reference server's disk-cache defects are
// named after the issue items (5b, 5c, 5d).
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "gateway/cache/checkpoint_file.hpp"
#include "gateway/cache/disk_store.hpp"
#include "gateway/cache/hot_store.hpp"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using namespace ds4::cache;

constexpr uint64_t kModel = 0x1234abcd5678ef01ULL;

std::vector<Token> seq(size_t n, Token base = 0) {
  std::vector<Token> t(n);
  for (size_t i = 0; i < n; i++) t[i] = base + Token(i % 1000);
  return t;
}

Checkpoint make(std::vector<Token> tokens, size_t state_bytes = 1000, uint8_t fill = 7) {
  Checkpoint c;
  c.model_fingerprint = kModel;
  c.reason = CheckpointReason::Turn;
  c.created_unix = 1700000000;
  c.tokens = std::move(tokens);
  c.contracts = "contract-image";
  c.state.assign(state_bytes, fill);
  for (size_t i = 0; i < c.state.size(); i++) c.state[i] = uint8_t(fill + i * 31);
  return c;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("ds4d-kvcache-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

DiskStoreConfig config(const fs::path& dir, uint64_t budget = 1 << 20) {
  DiskStoreConfig c;
  c.dir = dir;
  c.budget_bytes = budget;
  c.model_fingerprint = kModel;
  return c;
}

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

TEST(CheckpointFile, RoundTripsEverySection) {
  Checkpoint c = make(seq(50));
  Checkpoint d = decode_checkpoint(encode_checkpoint(c));
  EXPECT_EQ(d.tokens, c.tokens);
  EXPECT_EQ(d.state, c.state);
  EXPECT_EQ(d.contracts, c.contracts);
  EXPECT_EQ(d.model_fingerprint, kModel);
  EXPECT_EQ(d.reason, CheckpointReason::Turn);
  EXPECT_EQ(d.created_unix, c.created_unix);
}

TEST(CheckpointFile, EveryBitFlipAndEveryTruncationIsDetected) {
  const auto bytes = encode_checkpoint(make(seq(20), 64));
  for (size_t i = 0; i < bytes.size(); i++) {
    for (int bit : {0, 5}) {
      auto bad = bytes;
      bad[i] ^= uint8_t(1u << bit);
      EXPECT_THROW(decode_checkpoint(bad), CheckpointError) << "flip at byte " << i << " bit " << bit;
    }
  }
  for (size_t n = 0; n < bytes.size(); n++)
    EXPECT_THROW(decode_checkpoint(std::span(bytes.data(), n)), CheckpointError) << "truncated to " << n;
  auto padded = bytes;
  padded.push_back(0);
  EXPECT_THROW(decode_checkpoint(padded), CheckpointError);
}

TEST(CheckpointFile, NamesAreHashesOfModelAndTokens) {
  const auto a = checkpoint_file_name(kModel, seq(10));
  EXPECT_EQ(a.size(), 32u + 4u);
  EXPECT_TRUE(a.ends_with(".kvc"));
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), 32u);
  EXPECT_NE(a, checkpoint_file_name(kModel + 1, seq(10)));
  EXPECT_NE(a, checkpoint_file_name(kModel, seq(11)));
  EXPECT_EQ(a, checkpoint_file_name(kModel, seq(10)));
}

TEST(DiskStore, FindsTheLongestTokenPrefixAndSurvivesARestart) {
  TempDir t;
  {
    DiskStore s(config(t.path));
    ASSERT_TRUE(s.store(make(seq(10))));
    ASSERT_TRUE(s.store(make(seq(30))));
    ASSERT_TRUE(s.store(make(seq(20, 5))));  // another conversation
  }
  DiskStore s(config(t.path));  // the index is rebuilt from the directory
  EXPECT_EQ(s.files(), 3u);
  auto prompt = seq(40);
  auto m = s.find(prompt, prompt.size());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->tokens, 30u);
  EXPECT_EQ(s.find(prompt, 29)->tokens, 10u);  // no longer than asked
  EXPECT_FALSE(s.find(seq(40, 1), 40));
  EXPECT_EQ((fs::status(t.path).permissions() & fs::perms::all), fs::perms::owner_all);
}

TEST(DiskStore, Regression5c_ADeepCheckpointCanBeLoadedAnyNumberOfTimes) {
  TempDir t;
  DiskStore s(config(t.path, 64 << 20));
  auto name = s.store(make(seq(40000), 4096));
  ASSERT_TRUE(name);
  for (int i = 0; i < 5; i++) {
    auto c = s.load(*name);
    ASSERT_TRUE(c) << "load " << i;
    EXPECT_EQ(c->tokens.size(), 40000u);
    EXPECT_TRUE(fs::exists(t.path / *name));
  }
}

TEST(DiskStore, BadFilesAreRemovedWithOneWarningAndNeverLoaded) {
  TempDir t;
  std::string good, flipped, cut, foreign, old_version;
  {
    DiskStore s(config(t.path));
    good = *s.store(make(seq(10)));
    flipped = *s.store(make(seq(11)));
    cut = *s.store(make(seq(12)));
    old_version = *s.store(make(seq(13)));
  }
  {
    DiskStoreConfig other = config(t.path);
    other.model_fingerprint = kModel ^ 1;
    DiskStore s(other);  // removes all four: they belong to kModel
    EXPECT_EQ(s.files(), 0u);
  }
  {
    DiskStore s(config(t.path));
    good = *s.store(make(seq(10)));
    flipped = *s.store(make(seq(11)));
    cut = *s.store(make(seq(12)));
    old_version = *s.store(make(seq(13)));
    DiskStoreConfig other = config(t.path);
    other.model_fingerprint = kModel ^ 1;
    Checkpoint f = make(seq(14));
    f.model_fingerprint = other.model_fingerprint;
    foreign = checkpoint_file_name(kModel, f.tokens);  // named as ours, written by another model
    write_file_atomically(t.path, foreign, encode_checkpoint(f));
  }
  auto b = file_bytes(t.path / flipped);
  b[b.size() - 3] ^= 0x10;  // in the state section: only the full load sees it
  write_bytes(t.path / flipped, b);
  b = file_bytes(t.path / cut);
  b.resize(b.size() - 100);
  write_bytes(t.path / cut, b);
  b = file_bytes(t.path / old_version);
  b[8] = 0;  // format version 0, with a matching header hash (XXH64 of the first 40 bytes): a
             // well-formed file of an older format must still not be loaded
  {
    const uint64_t h = XXH64(b.data(), 40, 0);
    std::memcpy(b.data() + 40, &h, 8);
  }
  write_bytes(t.path / old_version, b);
  write_bytes(t.path / "README.txt", {'h', 'i'});                       // not ours: left alone
  write_bytes(t.path / (std::string(kTempPrefix) + good + "-1"), {1});  // an interrupted write

  std::vector<std::string> events;
  DiskStore s(config(t.path), [&](std::string_view e, std::string_view r, uint64_t) {
    events.push_back(std::string(e) + ":" + std::string(r));
  });
  EXPECT_TRUE(fs::exists(t.path / "README.txt"));
  EXPECT_FALSE(fs::exists(t.path / (std::string(kTempPrefix) + good + "-1")));
  EXPECT_FALSE(fs::exists(t.path / cut));
  EXPECT_FALSE(fs::exists(t.path / old_version));
  EXPECT_FALSE(fs::exists(t.path / foreign));
  EXPECT_EQ(s.files(), 2u);  // good, and flipped (its header and tokens are intact)
  auto prompt = seq(20);
  auto m = s.find(prompt, prompt.size());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, flipped);
  EXPECT_FALSE(s.load(flipped));  // detected on load, removed
  EXPECT_FALSE(fs::exists(t.path / flipped));
  m = s.find(prompt, prompt.size());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, good);
  EXPECT_TRUE(s.load(good));
  EXPECT_NE(std::find(events.begin(), events.end(), "reject:truncated"), events.end());
  EXPECT_NE(std::find(events.begin(), events.end(), "reject:corrupt"), events.end());
  EXPECT_NE(std::find(events.begin(), events.end(), "reject:foreign_model"), events.end());
  EXPECT_NE(std::find(events.begin(), events.end(), "reject:old_version"), events.end());
}

TEST(DiskStore, BudgetEvictsTheLeastValuableButNeverTheProtectedOrJustWritten) {
  TempDir t;
  const uint64_t one = encode_checkpoint(make(seq(100), 10000)).size();
  DiskStore s(config(t.path, 3 * one + one / 2));
  auto a = *s.store(make(seq(100, 1), 10000));
  auto b = *s.store(make(seq(100, 2), 10000));
  auto c = *s.store(make(seq(100, 3), 10000));
  ASSERT_TRUE(s.load(b));  // b has a hit: more valuable
  ASSERT_TRUE(s.load(b));
  // Regression 5b: the store forced by a miss names the checkpoint that prefixes the request
  // being served; it stays even though it is the least valuable one.
  std::vector<std::string> keep{a};
  auto d = *s.store(make(seq(100, 4), 10000), keep);
  EXPECT_TRUE(fs::exists(t.path / a));
  EXPECT_TRUE(fs::exists(t.path / b));
  EXPECT_FALSE(fs::exists(t.path / c));
  EXPECT_TRUE(fs::exists(t.path / d));
  EXPECT_LE(s.bytes(), 3 * one + one / 2);
  // Larger than the whole budget: not written, nothing evicted for it.
  EXPECT_FALSE(s.store(make(seq(100, 5), 8 * 10000)));
  EXPECT_EQ(s.files(), 3u);
}

TEST(DiskStore, Regression5d_IncrementalCheckpointsOfTheServedConversationDoNotCycle) {
  // At the budget, a conversation growing turn by turn writes one checkpoint per turn. Each write
  // must evict an older one and keep the newest, never the just-written one (the reference
  // server deleted its own fresh checkpoint and rewrote it next turn, forever).
  TempDir t;
  const uint64_t per = encode_checkpoint(make(seq(1000), 20000)).size();
  DiskStore s(config(t.path, 2 * per + per / 2));
  std::vector<std::string> names;
  uint64_t written = 0;
  for (int turn = 1; turn <= 8; turn++) {
    auto tokens = seq(size_t(turn) * 100);
    std::vector<std::string> keep;
    auto prompt = seq(size_t(turn) * 100 + 50);
    if (auto m = s.find(prompt, prompt.size())) keep.push_back(m->name);  // the one serving this turn
    auto name = s.store(make(tokens, 20000), keep);
    ASSERT_TRUE(name) << "turn " << turn;
    written++;
    EXPECT_TRUE(fs::exists(t.path / *name)) << "turn " << turn;
    for (const auto& k : keep) EXPECT_TRUE(fs::exists(t.path / k)) << "turn " << turn;
    auto m = s.find(seq(size_t(turn) * 100 + 60), 1 << 20);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->tokens, size_t(turn) * 100);  // the newest checkpoint is what the next turn finds
  }
  EXPECT_EQ(written, 8u);  // one write per turn, no rewrite cycle
  EXPECT_LE(s.files(), 2u);
}

TEST(DiskStore, AMissingDirectoryIsCreatedLaterAndServingNeverThrows) {
  TempDir t;
  const fs::path dir = t.path / "not" / "yet";
  fs::create_directories(t.path / "not");
  write_bytes(dir, {'x'});  // a file where the directory should be: cannot be created
  DiskStore s(config(dir));
  EXPECT_FALSE(s.health().empty());
  EXPECT_FALSE(s.store(make(seq(10))));
  fs::remove(dir);
  EXPECT_TRUE(s.store(make(seq(10))));  // retried at the next write
  EXPECT_TRUE(s.health().empty());
}

// A private mount namespace with a tiny tmpfs: disk full and read-only for real (root ignores
// file modes, so chmod cannot make a directory read-only here).
bool private_tmpfs(const fs::path& where, const char* size) {
  if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  std::string opts = std::string("size=") + size + ",mode=0700";
  return ::mount("tmpfs", where.c_str(), "tmpfs", 0, opts.c_str()) == 0;
}

TEST(DiskStore, DiskFullAndReadOnlyDirectoryKeepServing) {
  // In a child process: the mount namespace change must not leak into the other tests.
  TempDir t;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!private_tmpfs(t.path, "64k")) ::_exit(77);
    int failures = 0;
    auto check = [&](bool ok) { failures += !ok; };
    {
      // statvfs sees the 64 KiB: a larger checkpoint is not started.
      DiskStoreConfig real = config(t.path, 1 << 20);
      real.free_margin_bytes = 0;
      DiskStore s(real);
      check(!s.store(make(seq(20), 200000)).has_value());
      check(s.health().find("no_space") != std::string::npos);
      check(fs::is_empty(t.path));
    }
    // A free-space reading that lies (as on a filesystem that reserves blocks late): the write
    // itself meets ENOSPC.
    DiskStoreConfig lying = config(t.path, 1 << 20);
    lying.free_bytes = [](const fs::path&) { return std::optional<uint64_t>(1ull << 40); };
    DiskStore s(lying);  // the budget believes there is room; the disk has not
    check(s.store(make(seq(10), 1000)).has_value());
    auto big = s.store(make(seq(20), 200000));  // ENOSPC
    check(!big.has_value());
    check(s.health().find("disk_full") != std::string::npos);
    check(s.files() == 1);
    check(s.load(checkpoint_file_name(kModel, seq(10))).has_value());  // the good one still loads
    bool leftovers = false;
    for (auto& e : fs::directory_iterator(t.path)) leftovers |= e.path().filename().string().starts_with(kTempPrefix);
    check(!leftovers);
    check(::mount(nullptr, t.path.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0);
    check(!s.store(make(seq(30), 100)).has_value());
    check(s.health().find("read_only") != std::string::npos);
    check(s.load(checkpoint_file_name(kModel, seq(10))).has_value());
    DiskStore again(config(t.path, 1 << 20));  // starting on a read-only directory
    check(again.files() == 1);
    ::_exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount a private tmpfs here (no root, no user namespaces)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

void die_now() { ::kill(::getpid(), SIGKILL); }

TEST(DiskStore, KillDuringCheckpointWritesNeverLeavesACorruptFileOrLosesTheGoodOne) {
  TempDir t;
  {
    DiskStore s(config(t.path, 64 << 20));
    ASSERT_TRUE(s.store(make(seq(500), 100000, 1)));
  }
  const std::string name = checkpoint_file_name(kModel, seq(500));
  const auto good = file_bytes(t.path / name);
  std::mt19937 rng(42);
  int replaced = 0;  // rounds in which a replacement completed before the kill
  auto previous = good;
  for (int round = 0; round < 60; round++) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DiskStore s(config(t.path, 64 << 20));
      // Half the rounds die at the midpoint hook, half at a random moment from a timer thread.
      if (round % 2 == 0) s.after_partial_write = die_now;
      else {
        std::thread([d = std::uniform_int_distribution<int>(0, 20000)(rng)] {
          std::this_thread::sleep_for(std::chrono::microseconds(d));
          die_now();
        }).detach();
      }
      for (int i = 0;; i++) {
        s.store(make(seq(500), 100000, uint8_t(2 + i)));  // same name: replaces the good file
        s.store(make(seq(600), 100000, uint8_t(3 + i)));
      }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "round " << round;
    DiskStore s(config(t.path, 64 << 20));  // rebuild: temp files go, bad files would be removed
    auto c = s.load(name);
    ASSERT_TRUE(c) << "round " << round << ": the checkpoint of 500 tokens is gone";
    EXPECT_EQ(c->tokens, seq(500));
    const auto now = file_bytes(t.path / name);
    replaced += now != previous;
    previous = now;
    for (auto& e : fs::directory_iterator(t.path)) {
      const auto f = e.path().filename().string();
      EXPECT_FALSE(f.starts_with(kTempPrefix)) << f;
      if (f.ends_with(kCheckpointSuffix)) {
        EXPECT_NO_THROW(read_checkpoint(e.path())) << f;
      }
    }
  }
  EXPECT_GT(replaced, 0) << "no kill landed after a completed write; the test did not cover that case";
}

TEST(HotStore, KeepsWithinBudgetEvictsLeastValuableAndSparesTheProtected) {
  HotStore h(3 * 1000 + 3 * 10 * sizeof(Token) + 100);
  auto entry = [](std::vector<Token> t) {
    HotEntry e;
    e.tokens = std::move(t);
    e.state.assign(1000, 1);
    return e;
  };
  EXPECT_TRUE(h.insert(entry(seq(10, 1))).empty());
  EXPECT_TRUE(h.insert(entry(seq(10, 2))).empty());
  EXPECT_TRUE(h.insert(entry(seq(10, 3))).empty());
  auto prompt2 = seq(15, 2);
  auto i = h.find(prompt2, prompt2.size());
  ASSERT_TRUE(i);
  h.use(*i);                                           // conversation 2 is in use: worth more
  auto out = h.insert(entry(seq(10, 4)), seq(10, 1));  // 1 protected
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tokens, seq(10, 3));
  EXPECT_TRUE(h.contains(seq(10, 1)));
  EXPECT_TRUE(h.contains(seq(10, 2)));
  EXPECT_TRUE(h.contains(seq(10, 4)));
  EXPECT_LE(h.bytes(), h.budget());
  // Too large for the whole budget: handed straight back.
  HotEntry huge = entry(seq(10, 9));
  huge.state.assign(h.budget() + 1, 0);
  out = h.insert(std::move(huge));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(h.contains(seq(10, 9)));
}

}  // namespace
}  // namespace ds4::test
