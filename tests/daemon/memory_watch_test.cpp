// Memory watch: admission decisions at the floor and the PSI limit, the watch thread following a
// changing (fake) /proc/meminfo, and a missing meminfo refusing rather than admitting blindly.
#include "daemon/memory_watch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "tests/support/test_sysroot.hpp"

namespace ds4::daemon {
namespace {

using namespace std::chrono_literals;

config::Config::Memory memory_cfg(const testing::TempDir& d) {
  config::Config::Memory m;
  m.floor = 4ull << 30;
  m.psi_full_avg10_limit = 20;
  m.poll_ms = 10;
  m.meminfo_path = d.str() + "/meminfo";
  m.psi_path = d.str() + "/psi";
  return m;
}

// Replaces a file the way /proc reads look to the watch thread: whole, never half-written (a
// truncate-then-write lets a poll in between read an empty meminfo, which is "memory state
// unknown" and made the test below see the wrong refusal under load).
void replace_file(const std::filesystem::path& p, const std::string& content) {
  const std::filesystem::path tmp = p.string() + ".new";
  testing::write_file(tmp, content);
  std::filesystem::rename(tmp, p);
}

void write_state(const testing::TempDir& d, uint64_t available_kib, double full_avg10) {
  replace_file(d.path() / "meminfo", testing::meminfo_text(64ull << 20, available_kib, 0, 0));
  replace_file(d.path() / "psi", "some avg10=" + std::to_string(full_avg10 * 2) +
                                     " avg60=0.00 avg300=0.00 total=10\nfull avg10=" + std::to_string(full_avg10) +
                                     " avg60=0.00 avg300=0.00 total=5\n");
}

// Polls `done` until it holds. The bound only keeps a broken watch thread from hanging the
// suite; it is far above any poll interval, so a loaded machine cannot trip it.
template <class Pred>
bool wait_for(Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(Admission, FloorAndPressure) {
  testing::TempDir d;
  const config::Config::Memory cfg = memory_cfg(d);
  MemorySample s;
  s.mem_total = 64ull << 30;
  s.mem_available = 4ull << 30;
  EXPECT_FALSE(refusal_reason(s, cfg).has_value());  // exactly at the floor: admitted
  s.mem_available = (4ull << 30) - 1;
  const auto low = refusal_reason(s, cfg);
  ASSERT_TRUE(low.has_value());
  EXPECT_NE(low->find("MemAvailable 4.00 GiB is below the 4.00 GiB floor"), std::string::npos) << *low;
  s.mem_available = 8ull << 30;
  s.psi_full_avg10 = 25.5;
  const auto pressure = refusal_reason(s, cfg);
  ASSERT_TRUE(pressure.has_value());
  EXPECT_NE(pressure->find("PSI full avg10 25.50%"), std::string::npos) << *pressure;
  s.psi_full_avg10 = 20.0;
  EXPECT_FALSE(refusal_reason(s, cfg).has_value());
}

TEST(MemoryWatchThread, FollowsMeminfoAndFeedsTheSink) {
  testing::TempDir d;
  write_state(d, 2ull << 20, 0.5);  // 2 GiB available: below the floor
  std::atomic<uint64_t> last_available{0};
  MemoryWatch w(memory_cfg(d), [&](const MemorySample& s) { last_available = s.mem_available; });
  w.start();
  ASSERT_TRUE(w.admission().has_value());  // first sample is synchronous
  EXPECT_EQ(last_available.load(), 2ull << 30);
  EXPECT_DOUBLE_EQ(*w.latest().psi_full_avg10, 0.5);
  write_state(d, 16ull << 20, 0.5);
  ASSERT_TRUE(wait_for([&] { return !w.admission().has_value(); })) << *w.admission();
  // The sink runs before the decision is published, so it has seen the new sample by now.
  EXPECT_EQ(last_available.load(), 16ull << 30);
  write_state(d, 16ull << 20, 50.0);
  ASSERT_TRUE(wait_for([&] { return w.admission().has_value(); }));
  const auto refusal = w.admission();
  ASSERT_TRUE(refusal.has_value());
  EXPECT_NE(refusal->find("memory pressure is high"), std::string::npos) << *refusal;
  w.stop();
}

TEST(MemoryWatchThread, MissingMeminfoRefuses) {
  testing::TempDir d;
  MemoryWatch w(memory_cfg(d), {});
  w.start();
  const auto r = w.admission();
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->find("memory state unknown"), std::string::npos) << *r;
}

TEST(MemoryWatchThread, MissingPsiIsTolerated) {
  testing::TempDir d;
  write_state(d, 16ull << 20, 0);
  config::Config::Memory cfg = memory_cfg(d);
  cfg.psi_path = d.str() + "/no-psi";
  const MemorySample s = sample_memory(cfg);
  EXPECT_FALSE(s.psi_full_avg10.has_value());
  EXPECT_EQ(s.mem_available, 16ull << 30);
}

}  // namespace
}  // namespace ds4::daemon
