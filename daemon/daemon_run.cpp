// The daemon's start, serve and drain sequence; see daemon_run.hpp.
#include "daemon/daemon_run.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "config/drafter_spec.hpp"
#include "config/memory_budget.hpp"
#include "daemon/drafter_check.hpp"
#include "daemon/gateway_mode.hpp"
#include "daemon/heartbeat_backend.hpp"
#include "daemon/http_server_config.hpp"
#include "daemon/memory_watch.hpp"
#include "daemon/notifier.hpp"
#include "daemon/weight_pin.hpp"
#include "daemon/worker_heartbeat.hpp"
#include "engine/cuda/backend_choice.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/model.hpp"
#include "engine/model/mtp.hpp"
#include "engine/planner/byte_size.hpp"
#include "gateway/api/api_server.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "host/host_memory.hpp"

namespace ds4::daemon {
namespace {

using Clock = std::chrono::steady_clock;

std::string read_api_key(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path);
  if (!in) throw std::runtime_error("server.api_key_file: cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  std::string key = s.str();
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  if (key.empty()) throw std::runtime_error("server.api_key_file: " + path + " is empty");
  return key;
}

// What the loader thread hands back.
struct LoadOutcome {
  std::mutex mu;
  bool done = false;
  int exit_code = 0;  // non-zero: the load failed
  std::string error;
  std::string model_id;
  WeightPin pin;  // lives as long as the daemon

  bool finished() {
    std::lock_guard lock(mu);
    return done;
  }
  // The loader thread's last act: what it loaded, or why it failed.
  void publish(int code, std::string err, std::string id, WeightPin p = {}) {
    std::lock_guard lock(mu);
    done = true;
    exit_code = code;
    error = std::move(err);
    model_id = std::move(id);
    pin = std::move(p);
  }
};

// Device memory the CUDA placement keeps for the live contexts' state and the pass scratch they
// share: planner::device_state_bytes of the plan for `cfg`, whose budgets with_budgets resolved
// (max_batch included, so the plan counts that many contexts). 0 when the plan cannot be made
// (the loader then fails on the model itself, or the placement keeps only its workspace).
uint64_t device_reserve(const config::Config& cfg) {
  try {
    return planner::device_state_bytes(
        config::plan_for_config(cfg, host::read_meminfo(cfg.memory.meminfo_path).mem_total));
  } catch (const std::exception& e) {
    spdlog::warn("device reserve: no memory plan ({}); the placement counts the workspace only", e.what());
    return 0;
  }
}

void load_model(const config::Config& cfg, serving::Service& service, std::shared_ptr<WorkerHeartbeat> heartbeat,
                std::atomic<double>& progress, LoadOutcome& out) {
  int code = 0;
  std::string error, id;
  WeightPin pin;
  try {
    LoadOptions lo;
    lo.threads = cfg.model.threads;
    lo.populate = cfg.model.pin == config::PinMode::Lock;  // MAP_POPULATE before mlock
    if (cfg.engine.backend != cuda::Backend::Cpu) lo.device_reserve_bytes = device_reserve(cfg);
    LoadedModel loaded = load_model_on(
        cfg.engine.backend, cfg.model.path, lo, [](const std::string& line) { spdlog::info("{}", line); },
        [&](double f, std::string_view) {
          progress.store(f);
          service.set_load_progress(f);
        });
    const auto& file = loaded.model->gguf();
    if (cfg.model.pin == config::PinMode::Cuda && loaded.model->info().device == ComputeDevice::Cuda) {
      // The CUDA backend placed the weights itself (registered in place, or copied).
      spdlog::info("--pin cuda: nothing more to do, the CUDA backend holds the weights ({})",
                   loaded.model->info().placement);
    } else {
      pin = WeightPin::pin(cfg.model.pin, file.base(), file.size());
      if (cfg.model.pin != config::PinMode::None)
        spdlog::info("weights pinned ({}): {}", config::pin_mode_name(cfg.model.pin), planner::format_gib(pin.bytes()));
    }
    ContextOptions co;
    co.context_length = static_cast<uint32_t>(cfg.model.context.value_or(0));
    std::shared_ptr<const Model> model = loaded.model;
    auto backend =
        std::make_shared<serving::Ds4Backend>(std::move(loaded.model), std::move(loaded.tokenizer), std::string(), co);
    const config::DrafterSpec drafter = config::parse_drafter(cfg.speculation.drafter);
    if (drafter.kind == config::DrafterKind::Mtp && cfg.speculation.k > 0) {
      try {
        auto mtp = MtpModel::load(drafter.path, model, cfg.model.path);
        spdlog::info("speculative decoding: MTP drafter {} ({}), k = {}; {}", drafter.path,
                     planner::format_gib(mtp->weight_bytes()), cfg.speculation.k, mtp->placement());
        backend->set_drafter_model(std::move(mtp));
      } catch (const std::exception& e) {
        throw std::runtime_error("speculation.drafter " + config::drafter_name(drafter) + ": " + e.what());
      }
    }
    id = backend->model_id();
    service.set_backend(with_heartbeat(backend, heartbeat));
  } catch (const std::exception& e) {
    code = config::kExitConfigError;
    error = e.what();
    service.set_load_failed(error);
  }
  out.publish(code, std::move(error), std::move(id), std::move(pin));
}

// Gateway mode: the tokenizer and the upstreams instead of the model (gateway_mode.hpp).
void load_upstreams(const config::Config& cfg, serving::Service& service, upstream::UpstreamPool& pool,
                    LoadOutcome& out) {
  int code = 0;
  std::string error, id;
  try {
    auto backend = connect_upstreams(cfg, pool);
    id = backend->model_id();
    service.set_backend(std::move(backend));
  } catch (const std::exception& e) {
    code = config::kExitConfigError;
    error = e.what();
    service.set_load_failed(error);
  }
  out.publish(code, std::move(error), std::move(id));
}

std::string signed_gib(int64_t bytes) {
  if (bytes >= 0) return planner::format_gib(static_cast<uint64_t>(bytes));
  return "-" + planner::format_gib(static_cast<uint64_t>(-(bytes + 1)) + 1);
}

// The configuration with its `auto` budgets (context, hot cache, floor, max batch) sized by the
// same plan the supervisor checked before launching us (config/memory_budget.hpp); the plan counts
// max_batch live contexts, explicit or chosen. nullopt: the plan could not be made although a
// budget needed it (the error is logged).
std::optional<config::Config> with_budgets(const config::Config& given) {
  const bool needs_plan =
      !given.model.context || !given.cache.hot_bytes || !given.memory.floor || !given.server.max_batch;
  try {
    const uint64_t mem_total = host::read_meminfo(given.memory.meminfo_path).mem_total;
    const planner::Plan plan = config::plan_for_config(given, mem_total);
    config::Config cfg = config::with_planned_budgets(given, plan);
    spdlog::info("memory plan ({}): context {} tokens, hot cache {} B, floor {} B, total {} of MemTotal {}",
                 planner::verdict_name(plan.verdict), *cfg.model.context,
                 planner::format_bytes_exact(*cfg.cache.hot_bytes), planner::format_bytes_exact(*cfg.memory.floor),
                 planner::format_gib(plan.total_bytes), planner::format_gib(mem_total));
    if (given.server.max_batch) {
      spdlog::info("serving: max_batch {} (server.max_batch)", *cfg.server.max_batch);
    } else {
      spdlog::info("serving: max_batch {} (auto: {} KV per live context, headroom {})", *cfg.server.max_batch,
                   planner::format_gib(plan.kv_bytes_per_context), signed_gib(plan.headroom_bytes));
    }
    if (plan.verdict != planner::Verdict::Fits)
      spdlog::warn("the memory plan says '{}' (ds4d-supervisor would refuse it):\n{}",
                   planner::verdict_name(plan.verdict), planner::render_report(plan));
    return cfg;
  } catch (const std::exception& e) {
    if (needs_plan) {
      spdlog::error("memory plan: {} (needed to size the `auto` budgets)", e.what());
      return std::nullopt;
    }
    // Every budget is explicit: a model that cannot be read fails in the loader as before.
    spdlog::warn("memory plan: {}", e.what());
    spdlog::info("serving: max_batch {} (server.max_batch)", *given.server.max_batch);
    return given;
  }
}

}  // namespace

int run_daemon(const config::Config& given) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before any thread exists: all inherit it
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGHUP, SIG_IGN);

  Notifier notifier;
  try {
    check_drafter(given);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    notifier.status(std::string("Failed: ") + e.what());
    return config::kExitConfigError;
  }
  std::optional<config::Config> planned;
  try {
    planned = gateway_mode(given) ? gateway_config(given) : with_budgets(given);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    notifier.status(std::string("Failed: ") + e.what());
    return config::kExitConfigError;
  }
  if (!planned) {
    notifier.status("Failed: the memory plan could not be made (see the log)");
    return config::kExitConfigError;
  }
  const config::Config& cfg = *planned;
  // --backend cuda without a usable GPU is refused here, before the load, naming what is missing,
  // rather than served from the CPU (the loader logs the choice). A configuration error: the
  // supervisor does not restart in a loop.
  try {
    if (cfg.engine.backend == cuda::Backend::Cuda) cuda::choose_backend(cfg.engine.backend);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    notifier.status(std::string("Failed: ") + e.what());
    return config::kExitConfigError;
  }
  serving::Metrics metrics;
  serving::ServiceConfig sc;
  sc.max_queued_jobs = cfg.server.max_queue;
  sc.max_batch = *cfg.server.max_batch;  // set by with_budgets (the plan's) or gateway_config
  sc.hot_bytes = *cfg.cache.hot_bytes;
  sc.cache_dir = cfg.cache.dir;
  sc.disk_bytes = cfg.cache.disk_bytes;
  sc.checkpoint_min_tokens = cfg.cache.checkpoint_min_tokens;
  sc.checkpoint_interval_tokens = cfg.cache.checkpoint_interval_tokens;
  // check_drafter() has refused every drafter but these; the MTP block loads with the model.
  const config::DrafterKind drafter_kind = config::parse_drafter(cfg.speculation.drafter).kind;
  if (drafter_kind == config::DrafterKind::Ngram && cfg.speculation.k > 0) {
    sc.drafter = serving::make_ngram_drafter();
    sc.speculation_k = cfg.speculation.k;
    spdlog::info("speculative decoding: ngram drafter, k = {}", cfg.speculation.k);
  } else if (drafter_kind == config::DrafterKind::Mtp && cfg.speculation.k > 0 && !gateway_mode(cfg)) {
    sc.drafter = serving::make_mtp_drafter();
    sc.speculation_k = cfg.speculation.k;
  }
  std::shared_ptr<upstream::UpstreamPool> pool;
  if (gateway_mode(cfg)) {
    try {
      sc.remote = pool = make_upstream_pool(cfg, metrics);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      notifier.status(std::string("Failed: ") + e.what());
      return config::kExitConfigError;
    }
  }
  serving::Service service(sc, metrics);

  MemoryWatch watch(cfg.memory, [&metrics](const MemorySample& s) {
    metrics.set_mem_available_bytes(static_cast<double>(s.mem_available));
    if (s.psi_some_avg10) metrics.set_psi_memory_some_avg10_ratio(*s.psi_some_avg10 / 100.0);
    if (s.psi_full_avg10) metrics.set_psi_memory_full_avg10_ratio(*s.psi_full_avg10 / 100.0);
  });
  metrics.set_memory_floor_bytes(static_cast<double>(*cfg.memory.floor));
  watch.start();
  service.set_admission_gate([&watch] { return watch.admission(); });

  http::ServerConfig hc = http_server_config(cfg);
  std::unique_ptr<http::Server> server;
  // A missing key file or a refused address is the configuration's fault: the config-error
  // status, which the supervisor does not restart in a loop. A taken port is a runtime failure.
  int failure_code = config::kExitConfigError;
  auto failed = [&](const std::exception& e, int code) {
    spdlog::error("{}", e.what());
    notifier.status(std::string("Failed: ") + e.what());
    watch.stop();
    return code;
  };
  try {
    hc.api_key = read_api_key(cfg.server.api_key_file);
    server = http::make_api_server(hc, service, metrics);
    failure_code = config::kExitRuntime;
    server->start();
  } catch (const http::ServerConfigError& e) {
    return failed(e, config::kExitConfigError);
  } catch (const std::exception& e) {
    return failed(e, failure_code);
  }
  const std::string where = fmt::format("{}:{}", cfg.server.host, server->port());
  spdlog::info("listening on {} (answering 503 until the model is loaded)", where);

  auto heartbeat = std::make_shared<WorkerHeartbeat>();
  std::atomic<double> progress{0};
  LoadOutcome outcome;
  if (pool) spdlog::info("gateway mode: connecting to {}", cfg.engine.upstreams);
  else spdlog::info("loading {} (pin {})", cfg.model.path, config::pin_mode_name(cfg.model.pin));
  std::thread loader([&] {
    if (pool) load_upstreams(cfg, service, *pool, outcome);
    else load_model(cfg, service, heartbeat, progress, outcome);
  });

  const auto watchdog = notifier.watchdog_interval();
  const auto tick = watchdog ? std::max<std::chrono::microseconds>(*watchdog / 4, std::chrono::milliseconds(100))
                             : std::chrono::microseconds(std::chrono::seconds(1));
  const auto stall = std::chrono::seconds(cfg.server.engine_stall_s);
  bool ready = false, stuck_logged = false;
  auto last_progress_note = Clock::time_point{};
  int exit_code = 0;
  for (;;) {
    if (!ready) {
      if (outcome.finished()) {
        loader.join();
        if (outcome.exit_code != 0) {
          spdlog::error("loading the model failed: {}", outcome.error);
          notifier.status("Model load failed: " + outcome.error);
          exit_code = outcome.exit_code;
          break;
        }
        ready = true;
        spdlog::info("serving {} on {}", outcome.model_id, where);
        notifier.ready(fmt::format("Serving {} on {}", outcome.model_id, where));
      } else if (Clock::now() - last_progress_note >= std::chrono::seconds(5)) {
        last_progress_note = Clock::now();
        notifier.loading(fmt::format("Loading {} {:.0f}%", cfg.model.path, progress.load() * 100),
                         std::chrono::seconds(30));
      }
    } else if (service.engine_lost()) {
      // The GPU failed in a way its context does not survive: every later call fails too. Stop
      // and exit non-zero, so that systemd starts a fresh process (docs/cuda.md §device-lost).
      spdlog::critical("{}; exiting so that the service restarts", service.failure());
      notifier.status("Failed: " + service.failure());
      exit_code = config::kExitRuntime;
      break;
    } else if (watchdog) {
      if (heartbeat->alive(Clock::now(), stall)) {
        (void)service.queued();  // takes the serving lock: a deadlocked service stops the pings
        notifier.watchdog();
        stuck_logged = false;
      } else if (!stuck_logged) {
        stuck_logged = true;
        spdlog::error("engine worker stuck in one call for over {} s; withholding WATCHDOG=1", stall.count());
      }
    }
    // While loading, look at the loader often: READY=1 must follow the load at once, not the
    // next watchdog tick (a quarter of WatchdogSec: 15 s for the unit's 60 s).
    const auto wait = ready ? tick : std::min<std::chrono::microseconds>(tick, std::chrono::milliseconds(100));
    timespec ts{static_cast<time_t>(wait.count() / 1000000), static_cast<long>(wait.count() % 1000000) * 1000};
    const int sig = sigtimedwait(&stop_signals, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("received {}; draining in-flight requests (up to {} s)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                   cfg.server.drain_timeout_s);
      notifier.stopping("Draining in-flight requests");
      break;
    }
  }

  const auto drain = std::chrono::seconds(cfg.server.drain_timeout_s);
  server->stop(drain);
  service.stop(std::chrono::seconds(1));
  watch.stop();
  // A load that finished after the last look is joined: the shutdown is then the normal one.
  if (loader.joinable() && outcome.finished()) loader.join();
  if (loader.joinable()) {
    // Stopped while loading: the load cannot be interrupted, and nothing is left to serve.
    spdlog::info("stopped during the model load; exiting without waiting for it");
    spdlog::default_logger()->flush();
    std::_Exit(exit_code);
  }
  spdlog::info("stopped");
  return exit_code;
}

}  // namespace ds4::daemon
