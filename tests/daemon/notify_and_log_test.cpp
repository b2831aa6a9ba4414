// Notifier (against a test NOTIFY_SOCKET), the worker heartbeat's stall rule, and the journal vs
// console log styles.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "../supervisor/test_sysroot.hpp"
#include "config/log_setup.hpp"
#include "daemon/notifier.hpp"
#include "daemon/worker_heartbeat.hpp"
#include "supervisor/notify_relay.hpp"

namespace ds4::daemon {
namespace {

using namespace std::chrono_literals;

std::string receive(supervisor::NotifyRelaySocket& s) {
  pollfd p{s.fd(), POLLIN, 0};
  if (poll(&p, 1, 5000) != 1) return "<nothing>";
  std::string all;
  for (const auto& d : s.receive_all()) all += d.text + "|";
  return all;
}

TEST(Notifier, SendsReadyLoadingStoppingAndWatchdog) {
  supervisor::NotifyRelaySocket sock;
  setenv("NOTIFY_SOCKET", sock.address().c_str(), 1);
  setenv("WATCHDOG_USEC", "2000000", 1);
  unsetenv("WATCHDOG_PID");
  Notifier n;
  unsetenv("WATCHDOG_USEC");  // read once, at construction; NOTIFY_SOCKET is read at every send
  ASSERT_TRUE(n.enabled());
  ASSERT_TRUE(n.watchdog_interval().has_value());
  EXPECT_EQ(*n.watchdog_interval(), 2s);
  n.loading("Loading 12%", 30s);
  EXPECT_EQ(receive(sock), "STATUS=Loading 12%\nEXTEND_TIMEOUT_USEC=30000000|");
  n.ready("Serving tiny");
  EXPECT_EQ(receive(sock), "READY=1\nSTATUS=Serving tiny|");
  n.watchdog();
  EXPECT_EQ(receive(sock), "WATCHDOG=1|");
  n.stopping("Draining");
  EXPECT_EQ(receive(sock), "STOPPING=1\nSTATUS=Draining|");
  unsetenv("NOTIFY_SOCKET");
}

TEST(Notifier, WatchdogForAnotherPidIsIgnoredAndNoSocketIsANoop) {
  setenv("WATCHDOG_USEC", "2000000", 1);
  setenv("WATCHDOG_PID", "1", 1);
  unsetenv("NOTIFY_SOCKET");
  Notifier n;
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  EXPECT_FALSE(n.watchdog_interval().has_value());
  EXPECT_FALSE(n.enabled());
  EXPECT_FALSE(n.send("READY=1"));
}

TEST(WorkerHeartbeat, StuckOnlyInsideALongCall) {
  WorkerHeartbeat h;
  const auto t = WorkerHeartbeat::Clock::now();
  EXPECT_TRUE(h.alive(t + 1h, 10s));  // idle is alive
  h.begin_call(t);
  EXPECT_TRUE(h.alive(t + 10s, 10s));
  EXPECT_FALSE(h.alive(t + 11s, 10s));
  h.end_call(t + 12s);
  EXPECT_TRUE(h.alive(t + 1h, 10s));
  EXPECT_EQ(h.calls(), 1u);
}

std::string capture_stderr_of(const std::function<void()>& f) {
  testing::TempDir d;
  const std::string path = d.str() + "/err";
  fflush(stderr);
  const int saved = dup(2);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  f();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  return testing::read_file(path);
}

TEST(Logging, JournalStyleHasPriorityPrefixAndNoTimestamp) {
  config::Config::Log l;
  EXPECT_EQ(logging_style(l, "8:1234"), "journal");
  EXPECT_EQ(logging_style(l, nullptr), "console");
  l.format = "console";
  EXPECT_EQ(logging_style(l, "8:1234"), "console");
  l.format = "auto";
  l.level = "info";
  const std::string out = capture_stderr_of([&] {
    config::setup_logging(l, "8:1234");
    spdlog::info("hello {}", 1);
    spdlog::warn("careful");
    spdlog::error("broken");
    spdlog::debug("hidden at info");
  });
  EXPECT_EQ(out, "<6>hello 1\n<4>careful\n<3>broken\n");
}

TEST(Logging, ConsoleStyleHasTimestampsAndLevelNames) {
  config::Config::Log l;
  l.format = "console";
  l.level = "debug";
  const std::string out = capture_stderr_of([&] {
    config::setup_logging(l, nullptr);
    spdlog::debug("shown at debug");
  });
  EXPECT_NE(out.find("[debug] shown at debug"), std::string::npos) << out;
  EXPECT_EQ(out[0], '[');
  config::Config::Log bad;
  bad.level = "loud";
  EXPECT_THROW(config::setup_logging(bad, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::daemon
