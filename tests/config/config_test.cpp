// Configuration: precedence (flag > env > file > default) with origins, error messages naming
// their source, the --print-config round trip, and config/ds4d.example.toml documenting every key
// with its true default.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "config/config_loader.hpp"
#include "config/memory_budget.hpp"
#include "daemon/http_server_config.hpp"
#include "tests/support/test_sysroot.hpp"

namespace ds4::config {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Config load(std::vector<std::string> args, const Env& env, ConfigLoader** keep = nullptr,
            KeyScope scope = KeyScope::Daemon) {
  static std::unique_ptr<CLI::App> app;
  static std::unique_ptr<ConfigLoader> loader;
  app = std::make_unique<CLI::App>("test");
  loader = std::make_unique<ConfigLoader>(*app, scope);
  std::vector<const char*> argv{"ds4d"};
  for (auto& a : args) argv.push_back(a.c_str());
  app->parse(static_cast<int>(argv.size()), argv.data());
  Config c = loader->load(env.lookup());
  if (keep) *keep = loader.get();
  return c;
}

std::string config_file(testing::TempDir& d, const std::string& text) {
  const std::string p = d.str() + "/ds4d.toml";
  testing::write_file(p, text);
  return p;
}

TEST(Config, DefaultsWithoutAFile) {
  Env env;
  env.vars["DS4D_CONFIG"] = "";  // no file at all
  const Config c = load({}, env);
  EXPECT_EQ(c.server.port, 8080);
  EXPECT_EQ(c.server.host, "127.0.0.1");
  EXPECT_EQ(c.model.pin, PinMode::Lock);
  EXPECT_FALSE(c.memory.floor.has_value());  // auto: sized by the plan
  EXPECT_FALSE(c.cache.hot_bytes.has_value());
  EXPECT_FALSE(c.memory.workspace.has_value());
}

TEST(Config, FlagBeatsEnvBeatsFileBeatsDefault) {
  testing::TempDir d;
  const std::string f = config_file(d,
                                    "[server]\nport = 9000\nhost = \"0.0.0.0\"\nmax_queue = 3\n"
                                    "[memory]\nfloor = \"2GiB\"\n[log]\nlevel = \"debug\"\n");
  Env env;
  env.vars["DS4D_SERVER_PORT"] = "9100";
  env.vars["DS4D_SERVER_MAX_QUEUE"] = "5";
  ConfigLoader* l = nullptr;
  const Config c = load({"--config", f, "--port", "9200", "--memory-floor=3GiB"}, env, &l);
  EXPECT_EQ(c.server.port, 9200);         // flag (alias)
  EXPECT_EQ(c.server.max_queue, 5u);      // env over file
  EXPECT_EQ(c.server.host, "0.0.0.0");    // file
  EXPECT_EQ(c.memory.floor, 3ull << 30);  // flag over file
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_EQ(c.server.drain_timeout_s, 60u);  // default
  EXPECT_EQ(l->origins().at("server.port"), "flag --server-port");
  EXPECT_EQ(l->origins().at("server.max_queue"), "env DS4D_SERVER_MAX_QUEUE");
  EXPECT_EQ(l->origins().at("server.host"), "file " + f);
  EXPECT_EQ(l->origins().at("server.drain_timeout_s"), "default");
  EXPECT_EQ(l->config_file(), f);
  const auto given = l->given_flags(KeyScope::Daemon);
  EXPECT_EQ(given, (std::vector<std::string>{"--server-port=9200", "--memory-floor=3GiB"}));
}

TEST(Config, PinFlagAndEnum) {
  Env env;
  env.vars["DS4D_CONFIG"] = "";
  EXPECT_EQ(load({"--pin", "cuda"}, env).model.pin, PinMode::Cuda);
  EXPECT_EQ(load({"--pin", "none"}, env).model.pin, PinMode::None);
  try {
    load({"--pin", "gpu"}, env);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--model-pin: 'gpu' is not one of none, lock, cuda"), std::string::npos)
        << e.what();
  }
}

TEST(Config, EngineBackendFromFlagEnvAndDefault) {
  using ds4::cuda::Backend;
  Env env;
  env.vars["DS4D_CONFIG"] = "";
  EXPECT_EQ(load({}, env).engine.backend, Backend::Automatic);
  EXPECT_EQ(load({"--backend", "cuda"}, env).engine.backend, Backend::Cuda);
  env.vars["DS4D_ENGINE_BACKEND"] = "cpu";
  EXPECT_EQ(load({}, env).engine.backend, Backend::Cpu);
  EXPECT_EQ(load({"--engine-backend", "auto"}, env).engine.backend, Backend::Automatic);  // the flag wins
  try {
    load({"--backend", "gpu"}, env);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--engine-backend: 'gpu' is not one of auto, cpu, cuda"), std::string::npos)
        << e.what();
  }
}

TEST(Config, FileErrorsNameFileLineAndColumn) {
  testing::TempDir d;
  const std::string bad_value = config_file(d, "[server]\n\nport = 70000\n");
  try {
    load({"--config", bad_value}, Env{});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(bad_value + ":3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("server.port"), std::string::npos) << e.what();
  }
  const std::string unknown = config_file(d, "[server]\nprot = 1\n");
  EXPECT_THROW(load({"--config", unknown}, Env{}), ConfigError);
  const std::string unknown_section = config_file(d, "[servre]\nport = 1\n");
  EXPECT_THROW(load({"--config", unknown_section}, Env{}), ConfigError);
  const std::string syntax = config_file(d, "[server\nport = 1\n");
  EXPECT_THROW(load({"--config", syntax}, Env{}), ConfigError);
  EXPECT_THROW(load({"--config", d.str() + "/missing.toml"}, Env{}), ConfigError);
}

TEST(Config, EnvErrorsNameTheVariable) {
  Env env;
  env.vars["DS4D_CONFIG"] = "";
  env.vars["DS4D_MEMORY_FLOOR"] = "four gigs";
  try {
    load({}, env);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("DS4D_MEMORY_FLOOR: ", 0), 0u) << e.what();
  }
}

// speculation.drafter is none, ngram or mtp:FILE: a bare path (the key's old meaning) and
// typos are refused where they are set, naming the source, instead of being read as a file.
TEST(Config, SpeculationDrafterIsNoneNgramOrMtpFile) {
  EXPECT_EQ(load({}, Env{}).speculation.drafter, "none");
  EXPECT_EQ(load({"--speculation-drafter", "ngram"}, Env{}).speculation.drafter, "ngram");
  EXPECT_EQ(load({"--speculation-drafter", ""}, Env{}).speculation.drafter, "none");
  EXPECT_EQ(load({"--drafter", "mtp:/m/x.mtp.gguf"}, Env{}).speculation.drafter, "mtp:/m/x.mtp.gguf");
  Env env;
  env.vars["DS4D_SPECULATION_DRAFTER"] = "ngram";
  env.vars["DS4D_SPECULATION_K"] = "6";
  const Config c = load({}, env);
  EXPECT_EQ(c.speculation.drafter, "ngram");
  EXPECT_EQ(c.speculation.k, 6u);
  for (const std::string bad : {"/m/x.mtp.gguf", "mtp:", "n-gram", "None"}) {
    try {
      load({"--speculation-drafter", bad}, Env{});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("speculation"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load({"--speculation-k", "17"}, Env{}), ConfigError);
  EXPECT_EQ(load({"--speculation-k", "0"}, Env{}).speculation.k, 0u);
}

// server.max_batch: a count 1..64 or auto (the default: the plan chooses), from all three
// sources; anything else is refused naming the key's source and the accepted values.
TEST(Config, MaxBatchIsACountOrAuto) {
  Env none;
  none.vars["DS4D_CONFIG"] = "";
  EXPECT_FALSE(load({}, none).server.max_batch.has_value());
  testing::TempDir d;
  EXPECT_EQ(load({"--config", config_file(d, "[server]\nmax_batch = 4\n")}, Env{}).server.max_batch, 4u);
  EXPECT_FALSE(load({"--config", config_file(d, "[server]\nmax_batch = \"auto\"\n")}, Env{}).server.max_batch);
  Env env = none;
  env.vars["DS4D_SERVER_MAX_BATCH"] = "64";
  EXPECT_EQ(load({}, env).server.max_batch, 64u);
  EXPECT_EQ(load({"--max-batch", "2"}, env).server.max_batch, 2u);  // the flag wins
  EXPECT_FALSE(load({"--server-max-batch", "auto"}, env).server.max_batch);
  ConfigLoader* l = nullptr;
  load({"--max-batch", "3"}, none, &l, KeyScope::Both);  // the supervisor plans with it and forwards it
  EXPECT_EQ(l->given_flags(KeyScope::Daemon), (std::vector<std::string>{"--server-max-batch=3"}));

  const auto refused = [&](std::vector<std::string> args, const Env& e, const std::string& where,
                           const std::string& value) {
    try {
      load(std::move(args), e);
      ADD_FAILURE() << "accepted '" << value << "'";
    } catch (const ConfigError& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find(where), std::string::npos) << m;
      EXPECT_NE(m.find("expected a count 1..64 or auto, got '" + value + "'"), std::string::npos) << m;
    }
  };
  const std::string zero = config_file(d, "[server]\nmax_batch = 0\n");
  refused({"--config", zero}, Env{}, zero + ":2:13: server.max_batch: ", "0");
  Env big = none;
  big.vars["DS4D_SERVER_MAX_BATCH"] = "65";
  refused({}, big, "DS4D_SERVER_MAX_BATCH: ", "65");
  refused({"--max-batch", "abc"}, none, "--server-max-batch: ", "abc");
  refused({"--max-batch", "-1"}, none, "--server-max-batch: ", "-1");
}

// The plan's live contexts fill an `auto` max_batch; an explicit one is kept.
TEST(Config, PlannedBudgetsFillAnAutoMaxBatch) {
  planner::Plan plan;
  plan.input.live_contexts = 3;
  EXPECT_EQ(with_planned_budgets(Config{}, plan).server.max_batch, 3u);
  Config fixed;
  fixed.server.max_batch = 8;
  EXPECT_EQ(with_planned_budgets(fixed, plan).server.max_batch, 8u);
}

TEST(Config, PrintConfigRoundTrips) {
  testing::TempDir d;
  Env env;
  env.vars["DS4D_CONFIG"] = "";
  ConfigLoader* l = nullptr;
  const Config c = load({"--port", "1234", "--memory-workspace", "3GiB", "--hot-cache", "5GiB"}, env, &l);
  const std::string text = render_config(c, l->origins());
  EXPECT_NE(text.find("server.port = 1234  # flag --server-port"), std::string::npos) << text;
  EXPECT_NE(text.find("memory.earlyoom_dropin = \"/etc/systemd/system/earlyoom.service.d/50-ds4d.conf\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# memory.earlyoom_term_percent = (unset)"), std::string::npos) << text;
  const std::string f = config_file(d, text);
  const Config back = load({"--config", f}, Env{});
  for (const ConfigKey& k : config_keys()) EXPECT_EQ(k.get(back), k.get(c)) << k.path;
}

TEST(Config, ExampleFileDocumentsEveryKeyWithItsDefault) {
  const std::string example = testing::read_file(DS4D_EXAMPLE_CONFIG);  // this build's copy
  ASSERT_FALSE(example.empty());
  // Uncomment every "# key = value" line: the result must parse and give exactly the defaults.
  std::string uncommented;
  std::istringstream in(example);
  const std::regex assignment(R"(^#\s?([a-z_0-9]+ = .*)$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, m, assignment)) uncommented += m[1].str() + "\n";
    else if (!line.empty() && line[0] == '[') uncommented += line + "\n";
  }
  testing::TempDir d;
  ConfigLoader* l = nullptr;
  const Config c = load({"--config", config_file(d, uncommented)}, Env{}, &l);
  const Config defaults;
  for (const ConfigKey& k : config_keys()) {
    EXPECT_EQ(l->origins().at(k.path).rfind("file ", 0), 0u) << k.path << " is not documented in the example";
    EXPECT_EQ(k.get(c), k.get(defaults)) << k.path << ": the example's value is not the default";
  }
}

TEST(Config, EveryKeyHasDistinctNames) {
  std::set<std::string> flags, envs;
  for (const ConfigKey& k : config_keys()) {
    EXPECT_TRUE(flags.insert(k.flag).second) << k.flag;
    if (!k.alias.empty()) {
      EXPECT_TRUE(flags.insert(k.alias).second) << k.alias;
    }
    EXPECT_TRUE(envs.insert(k.env).second) << k.env;
    EXPECT_FALSE(k.help.empty()) << k.path;
  }
}

// Every field of the HTTP server's configuration is reachable from a key, with the server's own
// default: a new ServerConfig field without a key (or a drifted default) fails here. Before,
// limits, timeouts and the model name could be set by nothing but code.
TEST(Config, HttpServerFieldsComeFromKeysWithTheServersDefaults) {
  const http::ServerConfig server_defaults;
  const http::ServerConfig d = daemon::http_server_config(Config{});
  EXPECT_EQ(d.host, server_defaults.host);
  EXPECT_EQ(d.port, server_defaults.port);
  EXPECT_EQ(d.io_threads, server_defaults.io_threads);
  EXPECT_EQ(d.handler_threads, server_defaults.handler_threads);
  EXPECT_EQ(d.cors_origins, server_defaults.cors_origins);
  EXPECT_EQ(d.allowed_hosts, server_defaults.allowed_hosts);
  EXPECT_EQ(d.allow_unauthenticated_remote, server_defaults.allow_unauthenticated_remote);
  EXPECT_EQ(d.max_header_bytes, server_defaults.max_header_bytes);
  EXPECT_EQ(d.max_body_bytes, server_defaults.max_body_bytes);
  EXPECT_EQ(d.max_tokenize_response_bytes, server_defaults.max_tokenize_response_bytes);
  EXPECT_EQ(d.max_connections, server_defaults.max_connections);
  EXPECT_EQ(d.max_inflight_body_bytes, server_defaults.max_inflight_body_bytes);
  EXPECT_EQ(d.read_timeout, server_defaults.read_timeout);
  EXPECT_EQ(d.idle_timeout, server_defaults.idle_timeout);
  EXPECT_EQ(d.write_timeout, server_defaults.write_timeout);
  EXPECT_EQ(d.request_timeout, server_defaults.request_timeout);
  EXPECT_EQ(d.model_name, server_defaults.model_name);
  EXPECT_EQ(d.model_aliases, server_defaults.model_aliases);
  EXPECT_EQ(d.contract_mode, server_defaults.contract_mode);

  Env env;
  env.vars["DS4D_CONFIG"] = "";
  env.vars["DS4D_SERVER_MAX_BODY_BYTES"] = "1MiB";
  env.vars["DS4D_SERVER_CONTRACTS"] = "strict";
  env.vars["DS4D_SERVER_MODEL_NAME"] = "deepseek-v4-flash";
  env.vars["DS4D_SERVER_MODEL_ALIASES"] = "deepseek-chat, claude-*";
  env.vars["DS4D_SERVER_CORS_ORIGINS"] = "http://a.test, http://b.test";
  const Config c = load({"--server-request-timeout-s", "5", "--server-io-threads", "3", "--server-idle-timeout-s", "7",
                         "--server-read-timeout-s", "8", "--server-write-timeout-s", "9", "--server-max-header-bytes",
                         "16KiB", "--server-handler-threads", "4", "--server-max-tokenize-response-bytes", "1KiB"},
                        env);
  const http::ServerConfig hc = daemon::http_server_config(c);
  EXPECT_EQ(hc.max_body_bytes, 1u << 20);
  EXPECT_EQ(hc.contract_mode, "strict");
  EXPECT_EQ(hc.model_name, "deepseek-v4-flash");
  EXPECT_EQ(hc.model_aliases, (std::vector<std::string>{"deepseek-chat", "claude-*"}));
  EXPECT_EQ(hc.response_dir, c.cache.dir + "/responses");  // previous_response_id next to the checkpoints
  EXPECT_EQ(hc.cors_origins, (std::vector<std::string>{"http://a.test", "http://b.test"}));
  EXPECT_EQ(hc.request_timeout, std::chrono::seconds(5));
  EXPECT_EQ(hc.io_threads, 3u);
  EXPECT_EQ(hc.handler_threads, 4u);
  EXPECT_EQ(hc.idle_timeout, std::chrono::seconds(7));
  EXPECT_EQ(hc.read_timeout, std::chrono::seconds(8));
  EXPECT_EQ(hc.write_timeout, std::chrono::seconds(9));
  EXPECT_EQ(hc.max_header_bytes, 16u << 10);
  EXPECT_EQ(hc.max_tokenize_response_bytes, 1u << 10);
}

TEST(Config, UnknownDs4dVariablesAreListedForAWarning) {
  const char* envp[] = {"DS4D_SERVER_PORT=1", "DS4D_SERVR_PORT=2", "DS4D_CONFIG=/x", "DS4D_ISA=scalar",
                        "PATH=/bin",          "DS4D_CORS",         nullptr};
  EXPECT_EQ(unknown_environment(envp), (std::vector<std::string>{"DS4D_SERVR_PORT", "DS4D_CORS"}));
  EXPECT_TRUE(unknown_environment(nullptr).empty());
}

}  // namespace
}  // namespace ds4::config
