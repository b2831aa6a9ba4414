// load_program_config: the start-up ds4d and ds4d-supervisor share. A bad value stops with exit
// status 78 and "<program>: <source>: ..." on stderr; --print-config prints and stops with 0;
// otherwise the program goes on with the configuration and one warning per unknown DS4D_*
// variable naming the program.
#include "config/program_config.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "config/exit_status.hpp"
#include "tests/support/capture_stderr.hpp"

namespace ds4::config {
namespace {

struct Start {
  CLI::App app{"test"};
  ConfigLoader loader{app, KeyScope::Daemon};
  std::map<std::string, std::string> vars;
  std::ostringstream out, err;
  Config cfg;

  std::optional<int> run(bool print, const char* const* envp = nullptr) {
    const char* argv[] = {"ds4d", "--config", "/dev/null"};  // an empty file: no /etc/ds4d read
    app.parse(3, argv);
    EnvLookup env = [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    return load_program_config(loader, "ds4d-test", print ? &out : nullptr, err, envp, cfg, env);
  }
};

TEST(ProgramConfig, ABadValueStopsWithTheConfigErrorStatusNamingProgramAndSource) {
  Start s;
  s.vars["DS4D_SERVER_PORT"] = "not-a-port";
  EXPECT_EQ(s.run(false), std::optional<int>(kExitConfigError));
  EXPECT_EQ(s.err.str().rfind("ds4d-test: ", 0), 0u) << s.err.str();
  EXPECT_NE(s.err.str().find("DS4D_SERVER_PORT"), std::string::npos) << s.err.str();
}

TEST(ProgramConfig, PrintConfigPrintsTheEffectiveValuesAndStopsWithZero) {
  Start s;
  s.vars["DS4D_SERVER_PORT"] = "18123";
  EXPECT_EQ(s.run(true), std::optional<int>(0));
  EXPECT_NE(s.out.str().find("18123"), std::string::npos) << s.out.str();
  EXPECT_NE(s.out.str().find("env DS4D_SERVER_PORT"), std::string::npos) << s.out.str();
  EXPECT_TRUE(s.err.str().empty()) << s.err.str();
}

TEST(ProgramConfig, GoesOnWithTheConfigAndWarnsOncePerUnknownVariable) {
  Start s;
  s.vars["DS4D_SERVER_PORT"] = "18124";
  const char* envp[] = {"DS4D_SERVER_PORT=18124", "DS4D_SERVR_PORT=1", "DS4D_CONFIG=/x", nullptr};
  std::optional<int> done = 0;
  const std::string log = testing::capture_stderr_of([&] { done = s.run(false, envp); });
  ASSERT_EQ(done, std::nullopt) << s.err.str();
  EXPECT_EQ(s.cfg.server.port, 18124);
  EXPECT_NE(log.find("DS4D_SERVR_PORT is set but is not a configuration variable (see ds4d-test --help)"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("DS4D_SERVER_PORT is set"), std::string::npos) << log;
  EXPECT_EQ(log.find("DS4D_CONFIG is set"), std::string::npos) << log;
}

}  // namespace
}  // namespace ds4::config
