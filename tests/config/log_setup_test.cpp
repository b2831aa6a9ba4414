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

#include "tests/support/capture_stderr.hpp"

namespace ds4::config {
namespace {

using testing::capture_stderr_of;

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
