// /proc/meminfo and PSI parsing: units, required fields, malformed input.
#include "host/host_memory.hpp"

#include <gtest/gtest.h>

#include "tests/support/test_sysroot.hpp"

namespace ds4::host {
namespace {

TEST(MemInfo, ParsesKibIntoBytes) {
  const MemInfo m = parse_meminfo(testing::meminfo_text(124609375, 20000000, 1048576, 524288), "t");
  EXPECT_EQ(m.mem_total, 124609375ull * 1024);
  EXPECT_EQ(m.mem_available, 20000000ull * 1024);
  EXPECT_EQ(m.swap_total, 1048576ull * 1024);
  EXPECT_EQ(m.swap_free, 524288ull * 1024);
  EXPECT_EQ(m.fields.at("HugePages_Total"), 0u);
  EXPECT_EQ(m.fields.at("Cached"), 1024u * 1024);
}

TEST(MemInfo, MissingMemAvailableNamesTheSource) {
  try {
    parse_meminfo("MemTotal: 100 kB\n", "/fake/meminfo");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/fake/meminfo: no MemAvailable"), std::string::npos) << e.what();
  }
}

TEST(MemInfo, MalformedLineNamesTheLine) {
  try {
    parse_meminfo("MemTotal: 100 kB\nGarbage line\n", "m");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("m:2:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_meminfo("MemTotal: lots kB\n", "m"), std::runtime_error);
  EXPECT_THROW(read_meminfo("/nonexistent/meminfo"), std::runtime_error);
}

TEST(Psi, ParsesSomeAndFull) {
  const Psi p = parse_psi(
      "some avg10=1.50 avg60=0.80 avg300=0.10 total=123456\n"
      "full avg10=0.75 avg60=0.20 avg300=0.00 total=6543\n",
      "psi");
  EXPECT_DOUBLE_EQ(p.some.avg10, 1.5);
  EXPECT_DOUBLE_EQ(p.some.avg60, 0.8);
  EXPECT_EQ(p.some.total_us, 123456u);
  ASSERT_TRUE(p.has_full);
  EXPECT_DOUBLE_EQ(p.full.avg10, 0.75);
  EXPECT_EQ(p.full.total_us, 6543u);
}

TEST(Psi, RejectsIncompleteLines) {
  EXPECT_THROW(parse_psi("some avg10=1.0 total=5\n", "psi"), std::runtime_error);
  EXPECT_THROW(parse_psi("full avg10=0 avg60=0 avg300=0 total=0\n", "psi"), std::runtime_error);
  EXPECT_THROW(parse_psi("some avg10=x avg60=0 avg300=0 total=0\n", "psi"), std::runtime_error);
}

}  // namespace
}  // namespace ds4::host
