// Weight pinning: mlock really locks (VmLck grows), an RLIMIT_MEMLOCK too small gives the message
// that names the limit and LimitMEMLOCK, and --pin cuda without libcudart.so says so.
#include "daemon/weight_pin.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

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

TEST(WeightPin, CudaPinsOrExplainsWhy) {
  // Where libcudart.so and a GPU exist the registration must succeed; where the runtime is
  // missing, or present without a usable device, the error must name what failed.
  std::vector<char> buf(1 << 16, 1);
  void* h = dlopen("libcudart.so", RTLD_NOW);
  try {
    WeightPin p = WeightPin::pin(config::PinMode::Cuda, buf.data(), buf.size());
    EXPECT_NE(h, nullptr);
    EXPECT_EQ(p.mode(), config::PinMode::Cuda);
    EXPECT_EQ(p.bytes(), buf.size());
  } catch (const PinError& e) {
    const std::string m = e.what();
    if (h == nullptr) EXPECT_NE(m.find("cannot load libcudart.so"), std::string::npos) << m;
    else EXPECT_NE(m.find("cudaHostRegister of"), std::string::npos) << m;
  }
  if (h) dlclose(h);
}

}  // namespace
}  // namespace ds4::daemon
