// Notifier (against a test NOTIFY_SOCKET) and the worker heartbeat's stall rule.
#include "daemon/notifier.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>

#include "daemon/worker_heartbeat.hpp"
#include "supervisor/notify_relay.hpp"
#include "tests/support/test_sysroot.hpp"

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
  auto call = h.begin_call(t);
  EXPECT_TRUE(h.alive(t + 10s, 10s));
  EXPECT_FALSE(h.alive(t + 11s, 10s));
  h.end_call(call, t + 12s);
  EXPECT_TRUE(h.alive(t + 1h, 10s));
  EXPECT_EQ(h.calls(), 1u);
}

// Several sessions' threads make engine calls at once: one stuck call stays visible while
// others begin and end around it (with one shared slot the newest start hid it and the first
// end cleared it).
TEST(WorkerHeartbeat, AStuckCallIsSeenWhileOtherSessionsCallsComeAndGo) {
  WorkerHeartbeat h;
  const auto t = WorkerHeartbeat::Clock::now();
  auto stuck = h.begin_call(t);
  for (int i = 1; i <= 20; i++) {
    auto other = h.begin_call(t + i * 1s);
    h.end_call(other, t + i * 1s + 100ms);
  }
  EXPECT_FALSE(h.alive(t + 21s, 10s));
  h.end_call(stuck, t + 22s);
  EXPECT_TRUE(h.alive(t + 22s, 10s));
  EXPECT_EQ(h.calls(), 21u);
}

}  // namespace
}  // namespace ds4::daemon
