// The fatal-signal report: a fault in ds4d prints the signal, its cause, address and thread and
// the call stack, then the process still dies of that signal (what the supervisor and systemd
// act on). Each case runs in a death-test child.
#include "daemon/crash_report.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace {

// Writes through a null pointer from a frame of its own (not inlined: it must show up as a frame).
[[gnu::noinline]] void write_through_null(volatile int* p) { *p = 1; }

[[gnu::noinline]] void fault_twice_removed(volatile int* p) {
  write_through_null(p);
  std::abort();  // not reached
}

TEST(CrashReport, AFaultPrintsTheSignalAddressThreadAndStackThenStillKills) {
  EXPECT_EXIT(
      {
        ds4::daemon::install_crash_report(false);
        fault_twice_removed(nullptr);
      },
      testing::KilledBySignal(SIGSEGV),
      "ds4d: fatal SIGSEGV \\(address not mapped\\) at address 0x0 in thread [0-9]+ \\([^)]*\\); call stack.*\n"
      "ds4d:   #0 [^\n]*\nds4d:   #1 [^\n]*daemon_tests[^\n]*\nds4d:   #2 [^\n]*daemon_tests[^\n]*\nds4d:   #3 ");
}

TEST(CrashReport, ASignalSentByAProcessNamesItsSender) {
  EXPECT_EXIT(
      {
        ds4::daemon::install_crash_report(false);
        kill(getpid(), SIGBUS);
        pause();
      },
      testing::KilledBySignal(SIGBUS), "ds4d: fatal SIGBUS \\(sent by a process\\) from pid [0-9]+ in thread");
  EXPECT_EXIT(
      {
        ds4::daemon::install_crash_report(false);
        std::abort();
      },
      testing::KilledBySignal(SIGABRT), "ds4d: fatal SIGABRT \\(sent by a process\\) from pid [0-9]+ in thread");
}

TEST(CrashReport, UnderTheJournalEveryLineIsCritical) {
  EXPECT_EXIT(
      {
        ds4::daemon::install_crash_report(true);
        fault_twice_removed(nullptr);
      },
      testing::KilledBySignal(SIGSEGV), "^<2>ds4d: fatal SIGSEGV[^\n]*\n<2>ds4d:   #0 [^\n]*\n<2>ds4d:   #1 ");
}

}  // namespace
