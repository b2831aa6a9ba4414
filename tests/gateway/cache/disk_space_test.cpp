// Checkpoint writes on a disk without room or failing: the free-space check before a write (no
// byte written when the file would not fit), one log line per change of state however many
// writes fail, and every skipped write counted. The free-space reading is injected (a small
// filesystem cannot be mounted everywhere); a failing write is a temp name taken by a directory
// (open() fails with EISDIR even for root, who ignores file modes).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "gateway/cache/disk_store.hpp"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using namespace ds4::cache;

constexpr uint64_t kModel = 0x5eed5eed5eed5eedULL;

Checkpoint make(Token first, size_t state_bytes = 1000) {
  Checkpoint c;
  c.model_fingerprint = kModel;
  c.reason = CheckpointReason::Turn;
  c.created_unix = 1700000000;
  for (Token t = 0; t < 16; ++t) c.tokens.push_back(first + t);
  c.state.assign(state_bytes, 5);
  return c;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("ds4d-diskspace-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Routes spdlog's default logger into a string for the test's lifetime.
struct CapturedLog {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  size_t count(const std::string& needle) const {
    const std::string s = out.str();
    size_t n = 0;
    for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }
};

struct Events {
  std::map<std::string, int> count;  // "event/reason"
  DiskEventFn fn() {
    return [this](std::string_view event, std::string_view reason, uint64_t) {
      ++count[std::string(event) + "/" + std::string(reason)];
    };
  }
};

DiskStoreConfig config(const fs::path& dir, uint64_t* free) {
  DiskStoreConfig c;
  c.dir = dir;
  c.budget_bytes = 64 << 20;
  c.model_fingerprint = kModel;
  c.free_margin_bytes = 1 << 20;
  c.free_bytes = [free](const fs::path&) { return std::optional<uint64_t>(*free); };
  return c;
}

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// A 2 MB filesystem used to see 76 MB written and deleted in temp files: nothing is started now.
TEST(DiskSpace, ACheckpointThatWouldNotFitIsNotStarted) {
  TempDir t;
  uint64_t free = 0;
  Events events;
  DiskStore s(config(t.path, &free), events.fn());
  const Checkpoint c = make(100, 300000);
  const uint64_t size = encode_checkpoint(c).size();
  free = size + (1 << 20) - 1;  // one byte short of the file plus the margin
  EXPECT_FALSE(s.store(c).has_value());
  EXPECT_EQ(entries(t.path), 0u);  // no file, no temp file
  EXPECT_EQ(events.count["reject/no_space"], 1);
  EXPECT_NE(s.health().find("no_space"), std::string::npos);
  free = size + (1 << 20);
  EXPECT_TRUE(s.store(c).has_value());
  EXPECT_TRUE(s.health().empty());
  EXPECT_EQ(entries(t.path), 1u);
  // Short again: the stored checkpoint is not evicted to make room for one that cannot be written.
  free = 1000;
  EXPECT_FALSE(s.store(make(200, 300000)).has_value());
  EXPECT_EQ(s.files(), 1u);
  EXPECT_EQ(entries(t.path), 1u);
  EXPECT_EQ(events.count["reject/no_space"], 2);
}

TEST(DiskSpace, AFailingDiskLogsOncePerChangeOfStateAndCountsEveryFailure) {
  TempDir t;
  uint64_t free = 1ull << 40;
  Events events;
  CapturedLog log;
  DiskStore s(config(t.path, &free), events.fn());
  // Each checkpoint's temp name is taken by a directory: every write fails, each with a message
  // naming its own temp file.
  std::vector<fs::path> blockers;
  for (Token i = 0; i < 6; ++i) {
    const std::string name = checkpoint_file_name(kModel, make(i * 100).tokens);
    blockers.push_back(t.path / (std::string(kTempPrefix) + name + "-" + std::to_string(::getpid())));
    fs::create_directories(blockers.back());
  }
  for (Token i = 0; i < 6; ++i) EXPECT_FALSE(s.store(make(i * 100)).has_value());
  EXPECT_EQ(events.count["reject/write_failed"], 6);
  EXPECT_EQ(log.count("error kv checkpoints:"), 1u) << log.out.str();
  EXPECT_NE(s.health().find("write_failed"), std::string::npos);
  // No room is another kind of failure: logged once more, then quiet.
  free = 0;
  for (Token i = 0; i < 3; ++i) EXPECT_FALSE(s.store(make(i * 100)).has_value());
  EXPECT_EQ(events.count["reject/no_space"], 3);
  EXPECT_EQ(log.count("error kv checkpoints:"), 2u) << log.out.str();
  // Failing -> ok: one line.
  free = 1ull << 40;
  EXPECT_TRUE(s.store(make(1000)).has_value());
  EXPECT_TRUE(s.store(make(1100)).has_value());
  EXPECT_EQ(log.count("is writable again"), 1u) << log.out.str();
  // Ok -> failing again: one more line.
  for (Token i = 0; i < 6; ++i) EXPECT_FALSE(s.store(make(i * 100)).has_value());
  EXPECT_EQ(log.count("error kv checkpoints:"), 3u) << log.out.str();
  EXPECT_EQ(events.count["reject/write_failed"], 12);
  for (const auto& b : blockers) EXPECT_TRUE(fs::is_directory(b));  // not removed by the failed writes
}

}  // namespace
}  // namespace ds4::test
