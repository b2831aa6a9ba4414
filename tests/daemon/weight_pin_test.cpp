// Weight pinning: mlock really locks (VmLck grows), an RLIMIT_MEMLOCK too small gives the message
// that names the limit and LimitMEMLOCK, and --pin cuda without a usable GPU names what is missing
// (the registration itself is tested on the emulated device: tests/engine/cuda).
#include "daemon/weight_pin.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include "engine/cuda/device.hpp"

namespace ds4::daemon {
namespace {

uint64_t vm_locked_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmLck:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

TEST(WeightPin, LockPinsAndUnlocksOnDestruction) {
  std::vector<char> buf(1 << 20, 1);  // 1 MiB: within the default 8 MiB RLIMIT_MEMLOCK
  const uint64_t before = vm_locked_kib();
  {
    WeightPin p = WeightPin::pin(config::PinMode::Lock, buf.data(), buf.size());
    EXPECT_EQ(p.mode(), config::PinMode::Lock);
    EXPECT_GE(vm_locked_kib(), before + 1024);
    WeightPin moved = std::move(p);
    EXPECT_EQ(moved.bytes(), buf.size());
  }
  EXPECT_EQ(vm_locked_kib(), before);
}

TEST(WeightPin, NoneDoesNothing) {
  std::vector<char> buf(4096);
  const uint64_t before = vm_locked_kib();
  WeightPin p = WeightPin::pin(config::PinMode::None, buf.data(), buf.size());
  EXPECT_EQ(vm_locked_kib(), before);
}

TEST(WeightPin, MemlockLimitErrorNamesTheLimitAndTheFix) {
  // In a child: without CAP_IPC_LOCK (root drops it by becoming nobody) and with a zero soft
  // limit, mlock must fail and the message must say what to change.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    rlimit rl{};
    getrlimit(RLIMIT_MEMLOCK, &rl);
    rl.rlim_cur = 0;
    if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) _exit(4);
    std::vector<char> buf(1 << 20, 1);
    try {
      WeightPin::pin(config::PinMode::Lock, buf.data(), buf.size());
      _exit(1);
    } catch (const PinError& e) {
      const std::string m = e.what();
      const bool ok = m.find("RLIMIT_MEMLOCK is 0.00 GiB (soft)") != std::string::npos &&
                      m.find("LimitMEMLOCK=infinity") != std::string::npos && m.find("--pin lock") == 0;
      _exit(ok ? 0 : 2);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(WeightPin, CudaRegistersOrNamesWhatIsMissing) {
  // Through the CUDA driver, not the runtime (a GB10 with only the driver installed must pin):
  // with a usable device the registration succeeds; without one the error carries the probe's
  // reason (no driver, stub library, no device, ...) and what to use instead.
  std::vector<char> buf(1 << 16, 1);
  const cuda::DeviceInfo info = cuda::probe();
  try {
    WeightPin p = WeightPin::pin(config::PinMode::Cuda, buf.data(), buf.size());
    EXPECT_TRUE(info.usable);
    EXPECT_EQ(p.mode(), config::PinMode::Cuda);
    EXPECT_EQ(p.bytes(), buf.size());
  } catch (const PinError& e) {
    const std::string m = e.what();
    EXPECT_FALSE(info.usable) << m;
    EXPECT_NE(m.find("--pin cuda: cannot register host memory for the GPU: " + info.why_not), std::string::npos) << m;
    EXPECT_NE(m.find("--pin lock"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace ds4::daemon
