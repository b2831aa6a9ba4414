// Notify relay: which child messages go up to systemd, and the private socket delivering the
// sender's pid (so only the current child is relayed).
#include "supervisor/notify_relay.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>

namespace ds4::supervisor {
namespace {

TEST(RelayPolicy, FirstStartForwardsLoadingAndReady) {
  RelayState st;
  EXPECT_EQ(relay_child_message("STATUS=Loading 10%\nEXTEND_TIMEOUT_USEC=30000000", st),
            "STATUS=Loading 10%\nEXTEND_TIMEOUT_USEC=30000000");
  EXPECT_EQ(relay_child_message("READY=1\nSTATUS=Serving", st), "READY=1\nSTATUS=Serving");
  EXPECT_TRUE(st.upstream_ready);
  EXPECT_EQ(relay_child_message("WATCHDOG=1", st), "WATCHDOG=1");
}

TEST(RelayPolicy, AfterRestartProgressBecomesWatchdogPings) {
  RelayState st;
  st.upstream_ready = true;
  EXPECT_EQ(relay_child_message("STATUS=Loading 40%\nEXTEND_TIMEOUT_USEC=30000000", st),
            "STATUS=Loading 40%\nWATCHDOG=1");
  EXPECT_EQ(relay_child_message("READY=1\nSTATUS=Serving", st), "STATUS=Serving\nWATCHDOG=1");
}

TEST(RelayPolicy, DropsMainPidAndUnaskedStopping) {
  RelayState st;
  EXPECT_EQ(relay_child_message("MAINPID=1\nFDSTORE=1", st), "");
  EXPECT_EQ(relay_child_message("STOPPING=1", st), "");
  st.stopping = true;
  EXPECT_EQ(relay_child_message("STOPPING=1", st), "STOPPING=1");
  EXPECT_EQ(relay_child_message("ERRNO=12\nWATCHDOG=trigger", st), "ERRNO=12\nWATCHDOG=trigger");
}

TEST(RelaySocket, ReceivesDatagramsWithTheSenderPid) {
  NotifyRelaySocket sock;
  ASSERT_EQ(sock.address().front(), '@');
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("NOTIFY_SOCKET", sock.address().c_str(), 1);
    _exit(sd_notify(0, "READY=1\nSTATUS=hello") > 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  pollfd p{sock.fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  const auto got = sock.receive_all();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].text, "READY=1\nSTATUS=hello");
  EXPECT_EQ(got[0].sender, pid);
}

}  // namespace
}  // namespace ds4::supervisor
