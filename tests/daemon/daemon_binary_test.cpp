// ds4d end to end on the tiny DS4 model: readiness over a test NOTIFY_SOCKET (STATUS while
// loading, READY=1, WATCHDOG=1 pings), /health and the memory metrics, 503 below the memory floor
// through the serving admission gate, SIGTERM draining a request that is in flight, and the
// supervisor launching the real daemon with a raised oom_score_adj read back from /proc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>
#include <iostream>
#include <regex>
#include <thread>

#include "engine/cuda/device.hpp"
#include "host/oom_adjust.hpp"
#include "http_get.hpp"
#include "supervisor/notify_relay.hpp"
#include "tests/support/test_sysroot.hpp"

namespace ds4::daemon {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::write_file;

std::string tiny_model() {
  if (const char* v = std::getenv("DS4D_TINY_MODEL")) return v;
  if (std::filesystem::exists(DS4D_FORGED_TINY_MODEL)) return DS4D_FORGED_TINY_MODEL;
  if (const char* v = std::getenv("DS4D_DS4_VECTORS")) return std::string(v) + "/model.gguf";
  return std::string(DS4D_SHARED_DIR) + "/vectors/ds4-tiny/model.gguf";
}

class DaemonBinary : public ::testing::Test {
 protected:
  void SetUp() override { set_available_gib(32); }
  void TearDown() override {
    for (pid_t p : children) {  // a failed assertion must not leave a daemon behind
      if (kill(p, SIGKILL) == 0) waitpid(p, nullptr, 0);
    }
  }
  void set_available_gib(uint64_t gib) {
    write_file(dir.path() / "meminfo", testing::meminfo_text(64ull << 20, gib << 20, 0, 0));
    write_file(dir.path() / "psi",
               "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
               "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  }
  std::string config() {
    const std::string p = dir.str() + "/ds4d.toml";
    write_file(p, "[model]\npath = \"" + tiny_model() +
                      "\"\ncontext = 4096\npin = \"none\"\nthreads = 2\n"
                      "[server]\nport = 0\ndrain_timeout_s = 60\n"
                      "[memory]\nfloor = \"4GiB\"\npoll_ms = 20\nmeminfo_path = \"" +
                      dir.str() +
                      "/meminfo\"\n"
                      "psi_path = \"" +
                      dir.str() +
                      "/psi\"\noom_score_adj = 500\n"
                      "swap_size = 0\n"
                      "[cache]\nhot_bytes = \"64MiB\"\ndir = \"" +
                      dir.str() +
                      "/kv\"\n"
                      "[log]\nlevel = \"debug\"\n"
                      "[supervisor]\nuser = \"root\"\ndaemon = \"" DS4D_DAEMON_BIN "\"\n");
    return p;
  }
  pid_t start(const std::string& exe, std::vector<std::string> args, const std::string& notify,
              const char* watchdog_usec = nullptr) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int e = open((dir.str() + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(e, 2);
      setenv("NOTIFY_SOCKET", notify.c_str(), 1);
      unsetenv("JOURNAL_STREAM");
      unsetenv("WATCHDOG_PID");
      if (watchdog_usec) setenv("WATCHDOG_USEC", watchdog_usec, 1);
      else unsetenv("WATCHDOG_USEC");
      std::vector<char*> argv{const_cast<char*>(exe.c_str())};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    children.push_back(pid);
    return pid;
  }
  // Datagrams from `from` until one contains `needle` (60 s at most: the load is on a shared CPU).
  std::string await(const std::string& needle, pid_t from) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline && seen.find(needle) == std::string::npos) {
      pollfd p{systemd.fd(), POLLIN, 0};
      poll(&p, 1, 100);
      for (const auto& d : systemd.receive_all())
        if (d.sender == from) seen += d.text + "\n";
    }
    return seen;
  }
  uint16_t port_from_status() {
    std::smatch m;
    const std::regex re(R"(on 127\.0\.0\.1:(\d+))");
    return std::regex_search(seen, m, re) ? static_cast<uint16_t>(std::stoi(m[1].str())) : 0;
  }
  int wait_exit(pid_t pid) {
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    children.erase(std::remove(children.begin(), children.end(), pid), children.end());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string log() { return read_file(dir.path() / "stderr"); }

  testing::TempDir dir;
  supervisor::NotifyRelaySocket systemd;
  std::vector<pid_t> children;
  std::string seen;
};

constexpr const char* kChat =
    R"({"messages":[{"role":"user","content":"Hello there"}],"max_tokens":4,"temperature":0})";

// The main loop sleeps a quarter of WatchdogSec between its looks (30 s here): READY=1 used to
// wait for the next look after the load, so systemd saw the unit start that much late.
TEST_F(DaemonBinary, ReadyFollowsTheLoadNotTheWatchdogTick) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t d = start(DS4D_DAEMON_BIN, {"--config", config()}, systemd.address(), "120000000");
  await("READY=1", d);
  const double ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_NE(seen.find("READY=1"), std::string::npos) << seen << log();
  EXPECT_LT(ready_s, 15.0) << "READY=1 came " << ready_s << " s after the start\n" << log();
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
  EXPECT_EQ(log().find("stopped during the model load"), std::string::npos) << log();
}

TEST_F(DaemonBinary, ReportsReadinessServesAndPingsTheWatchdog) {
  const pid_t d = start(DS4D_DAEMON_BIN, {"--config", config()}, systemd.address(), "400000");
  await("READY=1", d);
  ASSERT_NE(seen.find("READY=1"), std::string::npos) << seen << log();
  EXPECT_NE(seen.find("STATUS=Loading " + tiny_model()), std::string::npos) << seen;
  EXPECT_NE(seen.find("EXTEND_TIMEOUT_USEC=30000000"), std::string::npos) << seen;
  const uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen;
  await("WATCHDOG=1", d);
  EXPECT_NE(seen.find("WATCHDOG=1"), std::string::npos) << seen;

  const auto health = testing::http_request(port, "GET", "/health");
  EXPECT_EQ(health.status, 200) << health.raw;
  const auto metrics = testing::http_request(port, "GET", "/metrics");
  EXPECT_NE(metrics.body().find("ds4d_host_mem_available_bytes 34359738368"), std::string::npos) << metrics.body();
  EXPECT_NE(metrics.body().find("ds4d_memory_floor_bytes 4294967296"), std::string::npos) << metrics.body();
  const auto chat = testing::http_request(port, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(chat.status, 200) << chat.raw;
  // The default backend (auto) says which device runs the model and why.
  const ds4::cuda::DeviceInfo gpu = ds4::cuda::probe();
  EXPECT_NE(log().find(gpu.usable ? "backend auto: CUDA on " + gpu.name : "backend auto: CPU (no CUDA: " + gpu.why_not),
            std::string::npos)
      << log();

  kill(d, SIGTERM);
  await("STOPPING=1", d);
  EXPECT_NE(seen.find("STOPPING=1"), std::string::npos) << seen;
  EXPECT_EQ(wait_exit(d), 0) << log();
}

// Configuration mistakes exit with 78 (EX_CONFIG), which the supervisor does not restart in a
// loop; a missing key file used to exit 1. A non-loopback address without a key is refused
// before anything listens (192.0.2.1 is TEST-NET: nothing would be reachable on it anyway).
TEST_F(DaemonBinary, ConfigErrorsExitWithTheConfigErrorStatus) {
  pid_t d = start(DS4D_DAEMON_BIN, {"--config", config(), "--server-api-key-file", dir.str() + "/missing.key"},
                  systemd.address());
  EXPECT_EQ(wait_exit(d), 78) << log();
  EXPECT_NE(log().find("server.api_key_file"), std::string::npos) << log();
  d = start(DS4D_DAEMON_BIN, {"--config", config(), "--host", "192.0.2.1"}, systemd.address());
  EXPECT_EQ(wait_exit(d), 78) << log();
  EXPECT_NE(log().find("without an API key"), std::string::npos) << log();
}

// --backend cuda without a usable GPU is a configuration error naming what is missing, never the
// CPU in its place.
TEST_F(DaemonBinary, BackendCudaWithoutAUsableGpuIsAConfigError) {
  const ds4::cuda::DeviceInfo gpu = ds4::cuda::probe();
  if (gpu.usable) GTEST_SKIP() << "a usable GPU is present: " << gpu.name;
  const pid_t d = start(DS4D_DAEMON_BIN, {"--config", config(), "--backend", "cuda"}, systemd.address());
  EXPECT_EQ(wait_exit(d), 78) << log();
  EXPECT_NE(log().find("--backend cuda: no usable CUDA device: " + gpu.why_not), std::string::npos) << log();
}

// An unusable speculation drafter stops the daemon at start with the config-error status and a
// line naming the file and the reason; the old key took any value and served without it. The
// exit is awaited with a deadline, so the old behaviour (serving) fails instead of hanging.
TEST_F(DaemonBinary, UnusableDrafterIsAConfigErrorNamingFileAndReason) {
  const auto exit_within = [&](pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) return -1;  // TearDown kills it
      std::this_thread::sleep_for(20ms);
    }
    children.erase(std::remove(children.begin(), children.end(), pid), children.end());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  const std::string missing = dir.str() + "/missing.mtp.gguf";
  pid_t d =
      start(DS4D_DAEMON_BIN, {"--config", config(), "--speculation-drafter", "mtp:" + missing}, systemd.address());
  EXPECT_EQ(exit_within(d), 78) << log();
  EXPECT_NE(log().find("speculation.drafter mtp:" + missing + ": no such file"), std::string::npos) << log();
  const std::string text = dir.str() + "/notes.mtp.gguf";
  write_file(text, "not a model\n");
  d = start(DS4D_DAEMON_BIN, {"--config", config(), "--speculation-drafter", "mtp:" + text}, systemd.address());
  EXPECT_EQ(exit_within(d), 78) << log();
  EXPECT_NE(log().find("mtp:" + text + ": not a GGUF file"), std::string::npos) << log();
  // A GGUF that is no sidecar of this model (the model itself: no conversion fingerprint).
  d = start(DS4D_DAEMON_BIN, {"--config", config(), "--speculation-drafter", "mtp:" + tiny_model()}, systemd.address());
  EXPECT_EQ(exit_within(d), 78) << log();
  EXPECT_NE(log().find("does not belong to the model"), std::string::npos) << log();
  // A bare path (the key's old meaning) is refused by the configuration itself.
  d = start(DS4D_DAEMON_BIN, {"--config", config(), "--speculation-drafter", missing}, systemd.address());
  EXPECT_EQ(exit_within(d), 78) << log();
  EXPECT_NE(log().find("is not none, ngram or mtp:FILE"), std::string::npos) << log();
}

// A usable MTP sidecar (the forged model's forged drafter) is loaded with the model and drafts
// through the daemon's whole engine path (heartbeat and batched-worker decorators included: each
// once dropped an engine operation). It used to be refused as "not implemented".
TEST_F(DaemonBinary, ServesWithAnMtpDrafter) {
  const std::string sidecar = std::filesystem::path(tiny_model()).replace_extension(".mtp.gguf").string();
  ASSERT_TRUE(std::filesystem::exists(sidecar)) << sidecar;
  const pid_t d =
      start(DS4D_DAEMON_BIN, {"--config", config(), "--speculation-drafter", "mtp:" + sidecar, "--speculation-k", "2"},
            systemd.address());
  await("READY=1", d);
  const uint16_t port = port_from_status();
  const auto chat = testing::http_request(port, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(chat.status, 200) << chat.raw;
  const std::string metrics = testing::http_request(port, "GET", "/metrics").body();
  const std::smatch m = [&] {
    std::smatch r;
    std::regex_search(metrics, r, std::regex(R"re(ds4d_speculative_tokens_total\{outcome="drafted"\} (\d+))re"));
    return r;
  }();
  ASSERT_EQ(m.size(), 2u) << metrics;
  EXPECT_GT(std::stoul(m[1].str()), 0u) << metrics;
  EXPECT_NE(log().find("speculative decoding: MTP drafter " + sidecar), std::string::npos) << log();
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
}

TEST_F(DaemonBinary, RefusesNewWorkBelowTheMemoryFloor) {
  const pid_t d = start(DS4D_DAEMON_BIN, {"--config", config()}, systemd.address());
  await("READY=1", d);
  const uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen << log();
  set_available_gib(2);
  testing::HttpResponse r;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {
    r = testing::http_request(port, "POST", "/v1/chat/completions", kChat);
  } while (r.status != 503 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(r.status, 503) << r.raw;
  EXPECT_NE(r.body().find("MemAvailable 2.00 GiB is below the 4.00 GiB floor"), std::string::npos) << r.raw;
  // Readiness says so too (it said 200 "ok" while refusing every generation).
  const auto health = testing::http_request(port, "GET", "/health");
  EXPECT_EQ(health.status, 503) << health.raw;
  EXPECT_NE(health.body().find(R"("status":"degraded")"), std::string::npos) << health.raw;
  EXPECT_NE(health.body().find("below the 4.00 GiB floor"), std::string::npos) << health.raw;
  set_available_gib(32);
  do {
    r = testing::http_request(port, "POST", "/v1/chat/completions", kChat);
  } while (r.status != 200 && std::chrono::steady_clock::now() < deadline + 20s);
  EXPECT_EQ(r.status, 200) << r.raw;
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
}

TEST_F(DaemonBinary, SigtermDrainsTheRequestInFlight) {
  const pid_t d = start(DS4D_DAEMON_BIN, {"--config", config()}, systemd.address());
  await("READY=1", d);
  const uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen << log();
  // A long prompt keeps the request in prefill long enough to be seen running. Size it to ~90 %
  // of the 4096-token context with the model's own tokenizer: an oversized prompt is refused
  // (400) with its token count, before any work.
  auto prompt_of = [](int reps) {
    std::string p;
    for (int i = 0; i < reps; ++i) p += "the quick brown fox ";
    return p;
  };
  auto completion = [](const std::string& prompt) {
    return R"({"prompt":")" + prompt + R"(","raw":true,"max_tokens":16,"temperature":0})";
  };
  const testing::HttpResponse probe =
      testing::http_request(port, "POST", "/v1/completions", completion(prompt_of(2000)));
  ASSERT_EQ(probe.status, 400) << probe.raw;
  std::smatch m;
  const std::string probe_body = probe.body();
  ASSERT_TRUE(std::regex_search(probe_body, m, std::regex(R"("n_prompt_tokens":(\d+))"))) << probe.raw;
  const int reps = static_cast<int>(2000LL * 3700 / std::stoll(m[1].str()));
  const std::string body = completion(prompt_of(reps));
  auto inflight =
      std::async(std::launch::async, [&] { return testing::http_request(port, "POST", "/v1/completions", body); });
  bool running = false;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!running && std::chrono::steady_clock::now() < deadline &&
         inflight.wait_for(0ms) != std::future_status::ready) {
    running =
        testing::http_request(port, "GET", "/metrics").body().find("ds4d_requests_running 1") != std::string::npos;
  }
  ASSERT_TRUE(running) << "the request finished before it was seen running";
  kill(d, SIGTERM);
  const testing::HttpResponse r = inflight.get();
  EXPECT_EQ(r.status, 200) << r.raw;
  EXPECT_NE(r.body().find("\"finish_reason\""), std::string::npos) << r.raw;
  EXPECT_EQ(wait_exit(d), 0) << log();
  EXPECT_NE(log().find("draining in-flight requests"), std::string::npos) << log();
}

TEST_F(DaemonBinary, SupervisorLaunchesTheDaemonWithItsOomScoreAdj) {
  testing::TempDir root;
  write_file(root.path() / "proc/meminfo", testing::meminfo_text(64ull << 20, 32ull << 20, 0, 0));
  write_file(root.path() / "proc/swaps", testing::kSwapsHeader);
  // The supervisor reads memory.meminfo_path under its --sysroot.
  write_file(root.path() / dir.str().substr(1) / "meminfo", testing::meminfo_text(64ull << 20, 32ull << 20, 0, 0));
  const pid_t sup = start(DS4D_SUPERVISOR_BIN, {"--config", config(), "--sysroot", root.str()}, systemd.address());
  await("READY=1", sup);
  ASSERT_NE(seen.find("READY=1"), std::string::npos) << seen << log();
  // The daemon is the supervisor's only child; find it through /proc.
  pid_t daemon = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file(e.path() / "stat");
    const size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(close_paren + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == sup) daemon = std::stoi(name);
  }
  ASSERT_NE(daemon, 0);
  EXPECT_EQ(read_file("/proc/" + std::to_string(daemon) + "/comm"), "ds4d\n");
  EXPECT_EQ(host::read_oom_score_adj(daemon), 500);
  const uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen;
  EXPECT_EQ(testing::http_request(port, "GET", "/health").status, 200);
  kill(sup, SIGTERM);
  EXPECT_EQ(wait_exit(sup), 0) << log();
}

// `auto` budgets (the default): the daemon sizes its context, hot cache, floor and max batch with
// the same planner functions ds4ctl plan and the supervisor use, so for one model and one MemTotal
// (here a 2 GiB machine, where the production figures would not fit) all three report the same
// figures and the plan fits.
std::string run_output(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) pclose(p);
  return out;
}

std::string match1(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : std::string();
}

TEST_F(DaemonBinary, AutoBudgetsAgreeWithDs4ctlPlanAndTheSupervisor) {
  const std::string meminfo = dir.str() + "/meminfo-2g";
  write_file(meminfo, testing::meminfo_text(2ull << 20, 1536ull << 10, 0, 0));
  const std::string conf = dir.str() + "/auto.toml";
  write_file(conf, "[model]\npath = \"" + tiny_model() + "\"\npin = \"none\"\nthreads = 2\n" +
                       "[server]\nport = 0\n[memory]\npoll_ms = 20\nmeminfo_path = \"" + meminfo +
                       "\"\npsi_path = \"\"\n[cache]\ndir = \"" + dir.str() + "/kv\"\n" +
                       "[supervisor]\nuser = \"root\"\ndaemon = \"" DS4D_DAEMON_BIN "\"\n");

  const std::string plan =
      run_output(std::string(DS4D_DS4CTL_BIN) + " plan --model " + tiny_model() + " --meminfo " + meminfo);
  const std::string plan_context = match1(plan, R"(at (\d+) tokens of context \(auto\))");
  const std::string plan_hot = match1(plan, R"(hot cache +[0-9.]+ GiB +([0-9,]+) B  \(auto\))");
  const std::string plan_floor = match1(plan, R"(floor +[0-9.]+ GiB +([0-9,]+) B  \(auto\))");
  const std::string plan_batch = match1(plan, R"(\((\d+) live contexts? \(auto\) ×)");
  ASSERT_FALSE(plan_context.empty() || plan_hot.empty() || plan_floor.empty() || plan_batch.empty()) << plan;
  EXPECT_NE(plan.find("verdict: fits"), std::string::npos) << plan;

  // The supervisor's dry run prints the plan it would enforce (and changes nothing).
  const std::string sup = run_output(std::string(DS4D_SUPERVISOR_BIN) + " --config " + conf + " --dry-run");
  EXPECT_EQ(match1(sup, R"(at (\d+) tokens of context)"), plan_context) << sup;
  EXPECT_EQ(match1(sup, R"(hot cache +[0-9.]+ GiB +([0-9,]+) B)"), plan_hot) << sup;
  EXPECT_EQ(match1(sup, R"(floor +[0-9.]+ GiB +([0-9,]+) B)"), plan_floor) << sup;
  EXPECT_EQ(match1(sup, R"(\((\d+) live contexts? \(auto\) ×)"), plan_batch) << sup;
  EXPECT_EQ(match1(sup, R"(swap +[0-9.]+ GiB +([0-9,]+) B)"), match1(plan, R"(swap +[0-9.]+ GiB +([0-9,]+) B)")) << sup;

  const pid_t d = start(DS4D_DAEMON_BIN, {"--config", conf}, systemd.address());
  await("READY=1", d);
  ASSERT_NE(seen.find("READY=1"), std::string::npos) << seen << log();
  const std::string daemon_log = log();
  EXPECT_EQ(match1(daemon_log, R"(memory plan \(fits\): context (\d+) tokens)"), plan_context) << daemon_log;
  EXPECT_EQ(match1(daemon_log, R"(hot cache ([0-9,]+) B)"), plan_hot) << daemon_log;
  EXPECT_EQ(match1(daemon_log, R"(floor ([0-9,]+) B)"), plan_floor) << daemon_log;
  EXPECT_EQ(match1(daemon_log, R"(serving: max_batch (\d+) \(auto: [0-9.]+ GiB KV per live context, headroom )"),
            plan_batch)
      << daemon_log;
  const uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen;
  std::string floor_digits = plan_floor;
  floor_digits.erase(std::remove(floor_digits.begin(), floor_digits.end(), ','), floor_digits.end());
  const auto metrics = testing::http_request(port, "GET", "/metrics");
  EXPECT_NE(metrics.body().find("ds4d_memory_floor_bytes " + floor_digits + "\n"), std::string::npos) << metrics.body();
  const auto chat = testing::http_request(port, "POST", "/v1/chat/completions", kChat);
  EXPECT_EQ(chat.status, 200) << chat.raw;
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
}

// The shipped daemon wraps its engine in the watchdog heartbeat decorator; the decorator used to
// drop the optional engine operations (snapshot, restore, truncate, the model fingerprint), so the
// real ds4d had no warm sessions and no disk checkpoints at all: an identical resend was a full
// re-prefill ("source":"miss") and every restart cold. Through the binary: the resend is served
// from RAM, and after a restart from the disk checkpoint.
TEST_F(DaemonBinary, ServesRepeatedPromptsFromItsWarmSessionsAndAfterARestartFromDisk) {
  std::string words;
  for (int i = 0; i < 120; i++) words += "item " + std::to_string(i) + " is ready; ";
  const std::string chat =
      R"({"messages":[{"role":"user","content":")" + words + R"("}],"max_tokens":4,"temperature":0})";
  auto cache_of = [](const testing::HttpResponse& r) {
    return match1(r.body(), R"re("source":"([a-z]+)")re") + " " + match1(r.body(), R"re("cached_tokens":(\d+))re");
  };
  // One session slot: the other conversation takes the live context's place, so the resend comes
  // from RAM (with several slots it would stay live in its own: batched_service_test.cpp).
  pid_t d = start(DS4D_DAEMON_BIN, {"--config", config(), "--max-batch", "1"}, systemd.address());
  await("READY=1", d);
  uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen << log();
  const auto first = testing::http_request(port, "POST", "/v1/chat/completions", chat);
  ASSERT_EQ(first.status, 200) << first.raw;
  EXPECT_EQ(cache_of(first), "none 0") << first.body();
  const std::string prompt_tokens = match1(first.body(), R"re("prompt_tokens":(\d+))re");
  ASSERT_GT(std::stoi(prompt_tokens), 256) << first.body();  // above cache.checkpoint_min_tokens
  // After another conversation: the warm restore point of the prompt, which sits before the
  // reply's opening (<｜Assistant｜><think>, 2 tokens).
  const int n = std::stoi(prompt_tokens);
  const auto other = testing::http_request(
      port, "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"something else"}],"max_tokens":2,"temperature":0})");
  ASSERT_EQ(other.status, 200) << other.raw;
  const auto warm = testing::http_request(port, "POST", "/v1/chat/completions", chat);
  ASSERT_EQ(warm.status, 200) << warm.raw;
  EXPECT_EQ(cache_of(warm), "warm " + std::to_string(n - 2)) << warm.body() << log();
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();

  seen.clear();
  d = start(DS4D_DAEMON_BIN, {"--config", config(), "--max-batch", "1"}, systemd.address());
  await("READY=1", d);
  port = port_from_status();
  ASSERT_NE(port, 0) << seen << log();
  const auto restarted = testing::http_request(port, "POST", "/v1/chat/completions", chat);
  ASSERT_EQ(restarted.status, 200) << restarted.raw;
  EXPECT_EQ(cache_of(restarted), "disk " + std::to_string(n - 2)) << restarted.body() << log();
  // The resend at once: the live context (prompt + 3 sampled tokens) is taken back to the
  // prompt's last token, which is kept back to have its logits.
  const auto again = testing::http_request(port, "POST", "/v1/chat/completions", chat);
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(cache_of(again), "live " + std::to_string(n - 1)) << again.body() << log();
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
}

// A Responses conversation continues across a restart: what previous_response_id needs is a
// record next to the KV checkpoints (<cache.dir>/responses), so the restarted daemon answers the
// continuation instead of 400 previous_response_not_found.
TEST_F(DaemonBinary, ContinuesAResponsesConversationAfterARestart) {
  std::string words;
  for (int i = 0; i < 120; i++) words += "step " + std::to_string(i) + " is done; ";
  pid_t d = start(DS4D_DAEMON_BIN, {"--config", config()}, systemd.address());
  await("READY=1", d);
  uint16_t port = port_from_status();
  ASSERT_NE(port, 0) << seen << log();
  const auto first = testing::http_request(
      port, "POST", "/v1/responses",
      R"({"input":")" + words + R"(","reasoning":{"effort":"none"},"max_output_tokens":4,"temperature":0})");
  ASSERT_EQ(first.status, 200) << first.raw;
  const std::string id = match1(first.body(), R"re("id":"(resp_[0-9a-f]+)")re");
  ASSERT_FALSE(id.empty()) << first.body();
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "kv" / "responses" / (id + ".json")));

  seen.clear();
  d = start(DS4D_DAEMON_BIN, {"--config", config()}, systemd.address());
  await("READY=1", d);
  port = port_from_status();
  ASSERT_NE(port, 0) << seen << log();
  const auto next = testing::http_request(
      port, "POST", "/v1/responses",
      R"({"previous_response_id":")" + id +
          R"(","input":"And the next step?","reasoning":{"effort":"none"},"max_output_tokens":4,"temperature":0})");
  ASSERT_EQ(next.status, 200) << next.raw << log();
  EXPECT_EQ(match1(next.body(), R"re("previous_response_id":"([^"]+)")re"), id) << next.body();
  std::cout << "after restart: cache source " << match1(next.body(), R"re("source":"([a-z]+)")re") << ", cached "
            << match1(next.body(), R"re("cached_tokens":(\d+))re") << " of "
            << match1(next.body(), R"re("input_tokens":(\d+))re") << " input tokens\n";
  // An id the daemon never issued is still the clear 400.
  const auto unknown = testing::http_request(port, "POST", "/v1/responses",
                                             R"({"previous_response_id":"resp_0123456789abcdef01234567","input":"x"})");
  EXPECT_EQ(unknown.status, 400) << unknown.raw;
  kill(d, SIGTERM);
  EXPECT_EQ(wait_exit(d), 0) << log();
}

}  // namespace
}  // namespace ds4::daemon
