// ensure_swap against a fake sysroot: swap already present (also one header page per area short,
// as the kernel reports it), our file active (listed in /proc/swaps, or named relative to another
// mount namespace so only swapon's EBUSY tells), an existing usable file, creation, an unusable
// file, a non-file in the way, and dry-run. Commands are recorded.
#include "host/swap_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "tests/support/test_sysroot.hpp"

namespace ds4::host {
namespace {

using testing::meminfo_text;
using testing::read_file;
using testing::write_file;

constexpr uint64_t kWant = 4ull << 20;  // 4 MiB: small enough to create for real in the test

class SwapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(root.path() / "proc/swaps", testing::kSwapsHeader);
    set_swap_kib(0);
  }
  void set_swap_kib(uint64_t kib) {
    write_file(root.path() / "proc/meminfo", meminfo_text(16 << 20, 8 << 20, kib, kib));
  }
  SwapResult ensure(bool dry_run = false) {
    SystemChanges changes(Sysroot(root.str()), runner, dry_run, out);
    SwapRequest r;
    r.file = "/var/lib/ds4d/swapfile";
    r.size_bytes = kWant;
    const SwapResult res = ensure_swap(r, changes);
    log = changes.log();
    return res;
  }
  std::string real_file() const { return root.str() + "/var/lib/ds4d/swapfile"; }
  void make_swap_file(mode_t mode, bool signature, uint64_t size = kWant) {
    std::string bytes(size, '\0');
    if (signature) bytes.replace(static_cast<size_t>(::sysconf(_SC_PAGESIZE)) - 10, 10, "SWAPSPACE2");
    write_file(real_file(), bytes);
    chmod(real_file().c_str(), mode);
  }

  testing::TempDir root;
  testing::RecordingRunner runner;
  std::ostringstream out;
  std::vector<std::string> log;
};

TEST_F(SwapTest, EnoughSwapAlreadyDoesNothing) {
  set_swap_kib(kWant / 1024);
  EXPECT_EQ(ensure(), SwapResult::AlreadyEnough);
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_FALSE(std::filesystem::exists(real_file()));
}

// mkswap keeps one header page that SwapTotal does not count: our own active 4 MiB file, listed
// relative to the mount namespace that swapped it on, shows as 4 MiB - 1 page. That is enough.
TEST_F(SwapTest, OneHeaderPagePerAreaShortIsEnough) {
  const uint64_t page_kib = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
  write_file(root.path() / "proc/swaps", std::string(testing::kSwapsHeader) + "/swapfile\tfile\t" +
                                             std::to_string(kWant / 1024 - page_kib) + "\t0\t-2\n");
  set_swap_kib(kWant / 1024 - page_kib);
  EXPECT_EQ(ensure(), SwapResult::AlreadyEnough);
  EXPECT_TRUE(runner.commands.empty());
  EXPECT_FALSE(std::filesystem::exists(real_file()));
}

TEST_F(SwapTest, TwoAreasAllowTwoHeaderPages) {
  const uint64_t page_kib = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
  write_file(root.path() / "proc/swaps", std::string(testing::kSwapsHeader) +
                                             "/dev/zram0\tpartition\t1024\t0\t100\n"
                                             "/swap.img\tfile\t2048\t0\t-2\n");
  set_swap_kib(kWant / 1024 - 2 * page_kib);
  EXPECT_EQ(ensure(), SwapResult::AlreadyEnough);
  EXPECT_TRUE(runner.commands.empty());
}

TEST_F(SwapTest, ShortfallBeyondTheHeaderPagesStillCreatesTheFile) {
  const uint64_t page_kib = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
  write_file(root.path() / "proc/swaps", std::string(testing::kSwapsHeader) + "/swap.img\tfile\t2048\t0\t-2\n");
  set_swap_kib(kWant / 1024 - 2 * page_kib);
  EXPECT_EQ(ensure(), SwapResult::Created);
  ASSERT_EQ(runner.commands.size(), 2u);
  EXPECT_EQ(runner.commands[0], "mkswap " + real_file());
}

// A previous run of the unit swapped our file on inside its own mount namespace: /proc/swaps names
// it "/swapfile", SwapTotal is below the wanted size (the configuration grew), and swapon on the
// file answers EBUSY. That is "already active", never an error, and swap is not turned off.
TEST_F(SwapTest, SwaponBusyOnOurFileMeansAlreadyActive) {
  make_swap_file(0600, true);
  write_file(root.path() / "proc/swaps", std::string(testing::kSwapsHeader) + "/swapfile\tfile\t2044\t0\t-2\n");
  set_swap_kib(2044);
  runner.answers["swapon"] = {255, "swapon: " + real_file() + ": swapon failed: Device or resource busy\n"};
  EXPECT_EQ(ensure(), SwapResult::AlreadyActive);
  ASSERT_EQ(runner.commands.size(), 1u);
  EXPECT_EQ(runner.commands[0], "swapon " + real_file());
  EXPECT_TRUE(std::filesystem::exists(real_file()));
  EXPECT_NE(log.back().find("already active"), std::string::npos) << log.back();
}

TEST_F(SwapTest, OtherSwaponFailureIsReported) {
  make_swap_file(0600, true);
  runner.answers["swapon"] = {255, "swapon: " + real_file() + ": swapon failed: Invalid argument\n"};
  try {
    ensure();
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Invalid argument"), std::string::npos) << e.what();
  }
}

// Without root no file can be made active swap here; the probe must at least not mistake an
// ordinary file (or a missing one) for one, and must leave its size alone.
TEST_F(SwapTest, ActiveProbeSaysNoForOrdinaryAndMissingFiles) {
  EXPECT_FALSE(is_active_swap_file(real_file()));
  make_swap_file(0600, true);
  EXPECT_FALSE(is_active_swap_file(real_file()));
  EXPECT_EQ(std::filesystem::file_size(real_file()), kWant);
}

TEST_F(SwapTest, CreatesFileThenMkswapAndSwapon) {
  EXPECT_EQ(ensure(), SwapResult::Created);
  ASSERT_TRUE(std::filesystem::exists(real_file()));
  EXPECT_EQ(std::filesystem::file_size(real_file()), kWant);
  struct stat st {};
  ASSERT_EQ(stat(real_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(runner.commands.size(), 2u);
  EXPECT_EQ(runner.commands[0], "mkswap " + real_file());
  EXPECT_EQ(runner.commands[1], "swapon " + real_file());
}

TEST_F(SwapTest, ActiveFileIsLeftAlone) {
  write_file(root.path() / "proc/swaps",
             std::string(testing::kSwapsHeader) + "/var/lib/ds4d/swapfile\tfile\t1024\t0\t-2\n");
  set_swap_kib(1024);
  EXPECT_EQ(ensure(), SwapResult::AlreadyActive);
  EXPECT_TRUE(runner.commands.empty());
}

TEST_F(SwapTest, OctalEscapedPathsInProcSwaps) {
  write_file(root.path() / "proc/swaps", std::string(testing::kSwapsHeader) + "/srv/my\\040swap\tfile\t1\t0\t-2\n");
  const auto paths = active_swap_paths((root.path() / "proc/swaps").string());
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0], "/srv/my swap");
}

TEST_F(SwapTest, ExistingSignedFileIsChmoddedAndActivated) {
  make_swap_file(0644, true);
  EXPECT_EQ(ensure(), SwapResult::ActivatedExisting);
  struct stat st {};
  ASSERT_EQ(stat(real_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(runner.commands.size(), 1u);
  EXPECT_EQ(runner.commands[0], "swapon " + real_file());
}

TEST_F(SwapTest, UnsignedOrWrongSizeFileIsRecreated) {
  make_swap_file(0600, false);
  EXPECT_EQ(ensure(), SwapResult::Created);
  EXPECT_EQ(runner.commands.size(), 2u);
  make_swap_file(0600, true, kWant / 2);
  runner.commands.clear();
  EXPECT_EQ(ensure(), SwapResult::Created);
  EXPECT_EQ(std::filesystem::file_size(real_file()), kWant);
  EXPECT_EQ(runner.commands.size(), 2u);
}

TEST_F(SwapTest, DirectoryInTheWayIsAnError) {
  std::filesystem::create_directories(real_file());
  EXPECT_THROW(ensure(), std::runtime_error);
  EXPECT_TRUE(runner.commands.empty());
}

TEST_F(SwapTest, MkswapFailureIsReported) {
  runner.next_status = 1;
  try {
    ensure();
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mkswap"), std::string::npos) << e.what();
  }
}

TEST_F(SwapTest, DryRunPrintsThePlanAndChangesNothing) {
  EXPECT_EQ(ensure(true), SwapResult::Created);
  EXPECT_FALSE(std::filesystem::exists(real_file()));
  EXPECT_TRUE(runner.commands.empty());
  const std::string o = out.str();
  EXPECT_NE(o.find("would: create swap file /var/lib/ds4d/swapfile"), std::string::npos) << o;
  EXPECT_NE(o.find("would: run mkswap " + real_file()), std::string::npos) << o;
  EXPECT_NE(o.find("would: run swapon " + real_file()), std::string::npos) << o;
}

TEST_F(SwapTest, ZeroSizeDisables) {
  SystemChanges changes(Sysroot(root.str()), runner, false, out);
  SwapRequest r;
  r.size_bytes = 0;
  EXPECT_EQ(ensure_swap(r, changes), SwapResult::Disabled);
  EXPECT_TRUE(runner.commands.empty());
}

}  // namespace
}  // namespace ds4::host
