// RestartPolicy: every exit class, the doubling backoff with its cap, and giving up.
#include "supervisor/restart_policy.hpp"

#include <gtest/gtest.h>

#include <csignal>

namespace ds4::supervisor {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

RestartSettings settings() {
  RestartSettings s;
  s.initial_delay = 1s;
  s.max_delay = 4s;
  s.max_restarts = 4;
  s.window = 600s;
  return s;
}

TEST(RestartPolicy, StopRequestedExitsZeroWhateverTheStatus) {
  RestartPolicy p(settings());
  EXPECT_EQ(p.on_exit({true, SIGTERM}, true, Clock::now()).exit_code, 0);
  EXPECT_EQ(p.on_exit({true, SIGKILL}, true, Clock::now()).exit_code, 0);
  EXPECT_FALSE(p.on_exit({false, 1}, true, Clock::now()).restart);
}

TEST(RestartPolicy, CleanExitAndConfigError) {
  RestartPolicy p(settings());
  const ExitDecision clean = p.on_exit({false, 0}, false, Clock::now());
  EXPECT_FALSE(clean.restart);
  EXPECT_EQ(clean.exit_code, 0);
  const ExitDecision cfg = p.on_exit({false, 78}, false, Clock::now());
  EXPECT_FALSE(cfg.restart);
  EXPECT_EQ(cfg.exit_code, 78);
}

TEST(RestartPolicy, ForeignSignalsExitNonZero) {
  RestartPolicy p(settings());
  const ExitDecision oom = p.on_exit({true, SIGKILL}, false, Clock::now());
  EXPECT_FALSE(oom.restart);
  EXPECT_EQ(oom.exit_code, 128 + SIGKILL);
  EXPECT_NE(oom.reason.find("killed by SIGKILL"), std::string::npos) << oom.reason;
  EXPECT_EQ(p.on_exit({true, SIGTERM}, false, Clock::now()).exit_code, 128 + SIGTERM);
}

TEST(RestartPolicy, CrashesRestartWithDoublingCappedDelayThenGiveUp) {
  RestartPolicy p(settings());
  const auto t = Clock::now();
  const ExitDecision a = p.on_exit({true, SIGSEGV}, false, t);
  const ExitDecision b = p.on_exit({false, 1}, false, t + 10s);
  const ExitDecision c = p.on_exit({true, SIGABRT}, false, t + 20s);
  const ExitDecision d = p.on_exit({false, 2}, false, t + 30s);
  ASSERT_TRUE(a.restart && b.restart && c.restart && d.restart);
  EXPECT_EQ(a.delay, 1s);
  EXPECT_EQ(b.delay, 2s);
  EXPECT_EQ(c.delay, 4s);
  EXPECT_EQ(d.delay, 4s);  // capped
  const ExitDecision e = p.on_exit({false, 2}, false, t + 40s);
  EXPECT_FALSE(e.restart);
  EXPECT_EQ(e.exit_code, 1);
}

TEST(RestartPolicy, OldCrashesLeaveTheWindow) {
  RestartPolicy p(settings());
  const auto t = Clock::now();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(p.on_exit({false, 1}, false, t + std::chrono::seconds(i)).restart);
  const ExitDecision later = p.on_exit({false, 1}, false, t + 1000s);
  EXPECT_TRUE(later.restart);
  EXPECT_EQ(later.delay, 1s);
}

}  // namespace
}  // namespace ds4::supervisor
