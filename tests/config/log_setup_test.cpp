// The journal vs console log styles of setup_logging.
#include "config/log_setup.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>

#include "tests/support/test_sysroot.hpp"

namespace ds4::config {
namespace {

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
  Config::Log l;
  EXPECT_EQ(logging_style(l, "8:1234"), "journal");
  EXPECT_EQ(logging_style(l, nullptr), "console");
  l.format = "console";
  EXPECT_EQ(logging_style(l, "8:1234"), "console");
  l.format = "auto";
  l.level = "info";
  const std::string out = capture_stderr_of([&] {
    setup_logging(l, "8:1234");
    spdlog::info("hello {}", 1);
    spdlog::warn("careful");
    spdlog::error("broken");
    spdlog::debug("hidden at info");
  });
  EXPECT_EQ(out, "<6>hello 1\n<4>careful\n<3>broken\n");
}

TEST(Logging, ConsoleStyleHasTimestampsAndLevelNames) {
  Config::Log l;
  l.format = "console";
  l.level = "debug";
  const std::string out = capture_stderr_of([&] {
    setup_logging(l, nullptr);
    spdlog::debug("shown at debug");
  });
  EXPECT_NE(out.find("[debug] shown at debug"), std::string::npos) << out;
  EXPECT_EQ(out[0], '[');
  Config::Log bad;
  bad.level = "loud";
  EXPECT_THROW(setup_logging(bad, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace ds4::config
