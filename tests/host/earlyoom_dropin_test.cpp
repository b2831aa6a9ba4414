// earlyoom drop-in: thresholds from the DS4 Flash plan, the exact ExecStart line ($$ escaping,
// -s 100,100, one --avoid), and installation against a fake sysroot: earlyoom absent, present
// without a drop-in, with the current one, with an outdated one; /etc/default/earlyoom untouched.
#include "host/earlyoom_dropin.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/test_sysroot.hpp"

namespace ds4::host {
namespace {

constexpr uint64_t kMemTotal = 127'600'000'000ull;
constexpr int64_t kHeadroom = 11'674'235'313ll;  // the shipping DS4 Flash q2 plan
constexpr uint64_t kFloor = 4ull << 30;
constexpr const char* kDropin = "/etc/systemd/system/earlyoom.service.d/50-ds4d.conf";

TEST(EarlyoomPolicy, DerivedFromTheFloorAndBelowHeadroom) {
  const EarlyoomPolicy p = earlyoom_policy(kMemTotal, kHeadroom, kFloor);
  EXPECT_DOUBLE_EQ(p.term_percent, 1.68);  // 2 GiB of 127.6 GB, rounded down
  EXPECT_DOUBLE_EQ(p.kill_percent, 0.84);  // 1 GiB
  EXPECT_EQ(earlyoom_exec_start(p),
            "/usr/bin/earlyoom $EARLYOOM_ARGS -m 1.68,0.84 -s 100,100 --avoid '^(ds4d|ds4d-supervisor)$$'");
}

TEST(EarlyoomPolicy, ThresholdAtSteadyStateIsRefused) {
  // 10 % of 127.6 GB is 12.76 GB, above the 11.67 GB headroom: earlyoom would fire at once.
  EXPECT_THROW(earlyoom_policy(kMemTotal, kHeadroom, kFloor, 10.0, 5.0), std::invalid_argument);
  EXPECT_NO_THROW(earlyoom_policy(kMemTotal, kHeadroom, kFloor, 5.0, 2.0));
  EXPECT_THROW(earlyoom_policy(kMemTotal, kHeadroom, kFloor, 2.0, 3.0), std::invalid_argument);  // kill > term
  EXPECT_THROW(earlyoom_policy(kMemTotal, -5, kFloor), std::invalid_argument);
}

TEST(EarlyoomPolicy, DropinOverridesExecStartAndSetsOwnAdjust) {
  const std::string d = render_earlyoom_dropin(earlyoom_policy(kMemTotal, kHeadroom, kFloor));
  EXPECT_NE(d.find("[Service]\nExecStart=\nExecStart=/usr/bin/earlyoom $EARLYOOM_ARGS -m"), std::string::npos) << d;
  EXPECT_NE(d.find("OOMScoreAdjust=-100\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("Environment="), std::string::npos) << d;  // EnvironmentFile= would override it
}

class EarlyoomInstall : public ::testing::Test {
 protected:
  EarlyoomResult ensure() {
    SystemChanges changes(Sysroot(root.str()), runner, false, out);
    EarlyoomSettings s;
    s.dropin_path = kDropin;
    return ensure_earlyoom_dropin(s, earlyoom_policy(kMemTotal, kHeadroom, kFloor), changes);
  }
  void install_earlyoom() {
    testing::write_file(root.path() / "lib/systemd/system/earlyoom.service",
                        "[Service]\nExecStart=/usr/bin/earlyoom\n");
    testing::write_file(root.path() / "etc/default/earlyoom", "EARLYOOM_ARGS=\"-r 3600\"\n");
  }
  std::string dropin() const { return testing::read_file(root.path() / std::string(kDropin).substr(1)); }

  testing::TempDir root;
  testing::RecordingRunner runner;
  std::ostringstream out;
};

TEST_F(EarlyoomInstall, AbsentEarlyoomWritesNothing) {
  EXPECT_EQ(ensure(), EarlyoomResult::NotInstalled);
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_FALSE(std::filesystem::exists(root.path() / "etc/systemd"));
}

TEST_F(EarlyoomInstall, WritesDropinAndRestartsOnce) {
  install_earlyoom();
  EXPECT_EQ(ensure(), EarlyoomResult::Updated);
  EXPECT_EQ(dropin(), render_earlyoom_dropin(earlyoom_policy(kMemTotal, kHeadroom, kFloor)));
  ASSERT_EQ(runner.commands.size(), 2u);
  EXPECT_EQ(runner.commands[0], "systemctl daemon-reload");
  EXPECT_EQ(runner.commands[1], "systemctl try-restart earlyoom.service");
  // Second start with the same plan: nothing changes, earlyoom is not restarted.
  runner.commands.clear();
  EXPECT_EQ(ensure(), EarlyoomResult::Unchanged);
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_EQ(testing::read_file(root.path() / "etc/default/earlyoom"), "EARLYOOM_ARGS=\"-r 3600\"\n");
}

TEST_F(EarlyoomInstall, OutdatedDropinIsRewrittenAndEarlyoomRestarted) {
  install_earlyoom();
  testing::write_file(root.path() / std::string(kDropin).substr(1),
                      "[Service]\nExecStart=\nExecStart=/usr/bin/earlyoom -m 10,5\n");
  EXPECT_EQ(ensure(), EarlyoomResult::Updated);
  EXPECT_NE(dropin().find("-m 1.68,0.84 -s 100,100"), std::string::npos);
  EXPECT_EQ(runner.commands.size(), 2u);
}

TEST_F(EarlyoomInstall, UsrLibUnitCountsAsInstalled) {
  testing::write_file(root.path() / "usr/lib/systemd/system/earlyoom.service", "[Service]\n");
  EXPECT_EQ(ensure(), EarlyoomResult::Updated);
}

TEST_F(EarlyoomInstall, DryRunPrintsWithoutWriting) {
  install_earlyoom();
  SystemChanges changes(Sysroot(root.str()), runner, true, out);
  EarlyoomSettings s;
  s.dropin_path = kDropin;
  EXPECT_EQ(ensure_earlyoom_dropin(s, earlyoom_policy(kMemTotal, kHeadroom, kFloor), changes), EarlyoomResult::Updated);
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_FALSE(std::filesystem::exists(root.path() / std::string(kDropin).substr(1)));
  EXPECT_NE(out.str().find(std::string("would: write ") + kDropin), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("would: run systemctl try-restart earlyoom.service"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace ds4::host
