// spawn_daemon: oom_score_adj and the notify/watchdog environment as the child sees them, errors
// from the child reported in the parent, and the privilege drop when the test runs as root.
#include "supervisor/daemon_launch.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/oom_adjust.hpp"
#include "tests/support/test_sysroot.hpp"

namespace ds4::supervisor {
namespace {

int wait_exit(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(DaemonLaunch, ChildGetsOomScoreAdjAndNotifyEnvironment) {
  testing::TempDir dir;
  const std::string out = dir.str() + "/report";
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "cat /proc/self/oom_score_adj > " + out + "; echo \"$NOTIFY_SOCKET\" >> " + out +
                   "; echo \"$WATCHDOG_USEC $WATCHDOG_PID $$\" >> " + out};
  spec.oom_score_adj = 500;  // raising needs no privilege
  spec.notify_socket = "@relay-test";
  spec.watchdog_usec = 30000000;
  const pid_t pid = spawn_daemon(spec);
  ASSERT_EQ(wait_exit(pid), 0);
  const std::string r = testing::read_file(out);
  EXPECT_EQ(r, "500\n@relay-test\n30000000 " + std::to_string(pid) + " " + std::to_string(pid) + "\n");
}

TEST(DaemonLaunch, RunningChildReportsItsAdjustInProc) {
  LaunchSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  spec.oom_score_adj = 500;
  const pid_t pid = spawn_daemon(spec);
  EXPECT_EQ(host::read_oom_score_adj(pid), 500);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 128 + SIGTERM);
}

TEST(DaemonLaunch, ExecFailureIsReportedInTheParent) {
  LaunchSpec spec;
  spec.argv = {"/nonexistent/ds4d"};
  try {
    spawn_daemon(spec);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exec /nonexistent/ds4d: No such file"), std::string::npos) << e.what();
  }
}

TEST(DaemonLaunch, BadOomScoreAdjIsReported) {
  LaunchSpec spec;
  spec.argv = {"/bin/true"};
  spec.oom_score_adj = 5000;
  try {
    spawn_daemon(spec);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("oom_score_adj 5000"), std::string::npos) << e.what();
  }
}

TEST(DaemonLaunch, DropsPrivilegesToTheServiceUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to change user";
  testing::TempDir dir;
  chmod(dir.str().c_str(), 0777);
  const std::string out = dir.str() + "/id";
  LaunchSpec spec;
  spec.argv = {"/bin/sh", "-c", "id -u > " + out + "; id -g >> " + out + "; id -G >> " + out};
  spec.identity = host::lookup_service_identity("nobody");
  const pid_t pid = spawn_daemon(spec);
  ASSERT_EQ(wait_exit(pid), 0);
  const std::string uid = std::to_string(spec.identity->uid), gid = std::to_string(spec.identity->gid);
  EXPECT_EQ(testing::read_file(out).substr(0, uid.size() + gid.size() + 2), uid + "\n" + gid + "\n");
}

TEST(ServiceIdentity, UnknownUserIsAnError) {
  EXPECT_THROW(host::lookup_service_identity("no-such-user-ds4d"), std::runtime_error);
}

}  // namespace
}  // namespace ds4::supervisor
