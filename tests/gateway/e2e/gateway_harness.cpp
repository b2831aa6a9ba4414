// gateway_harness: Model (or a scripted engine) + Service + Server on one port, for tests that
// talk to the gateway from outside the process (the openai npm client test).
//
//   gateway_harness --model tiny.gguf [--api-key K] [--port 0] [--queue 8] [--ctx 4096]
//   gateway_harness --scripted 'reasoning</think>content' ...
//
// The server starts before the model loads, so /health answers 503 "loading" meanwhile. When
// listening it prints "LISTENING <port>" on stdout (port 0 picks a free one); when the model is
// ready, "READY". It runs until stdin reaches EOF or SIGTERM/SIGINT arrives, then drains and
// exits 0. With --scripted the engine is ScriptedBackend (bytes as tokens, the given reply after
// every prompt), which lets a client test exercise tool-call and reasoning deltas that a random
// tiny model never produces.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <thread>

#include "gateway/api/api_server.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/gateway/scripted_backend.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ds4d gateway test harness"};
  std::string model_path, scripted, api_key, contract_mode = "warn";
  uint16_t port = 0;
  size_t queue = 8;
  uint32_t ctx = 4096;
  int decode_delay_ms = 0;
  app.add_option("--model", model_path, "GGUF model to load");
  app.add_option("--scripted", scripted, "scripted reply instead of a model");
  app.add_option("--scripted-delay-ms", decode_delay_ms, "scripted engine: delay per decoded token");
  app.add_option("--api-key", api_key, "bearer token");
  app.add_option("--port", port, "port (0: ephemeral)");
  app.add_option("--queue", queue, "max queued jobs");
  app.add_option("--ctx", ctx, "context length");
  app.add_option("--contract-mode", contract_mode, "off | warn | strict");
  CLI11_PARSE(app, argc, argv);
  if (model_path.empty() == scripted.empty()) {
    std::cerr << "give exactly one of --model or --scripted\n";
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  ds4::serving::Metrics metrics;
  ds4::serving::ServiceConfig service_config;
  service_config.max_queued_jobs = queue;
  ds4::serving::Service service(service_config, metrics);
  ds4::http::ServerConfig config;
  config.port = port;
  config.api_key = api_key;
  config.contract_mode = contract_mode;
  std::unique_ptr<ds4::http::Server> server = ds4::http::make_api_server(config, service, metrics);
  server->start();
  std::cout << "LISTENING " << server->port() << std::endl;

  try {
    if (!scripted.empty()) {
      auto backend = std::make_shared<ds4::test::ScriptedBackend>(scripted, ctx);
      backend->decode_delay_ms = decode_delay_ms;
      service.set_backend(backend);
    } else {
      ds4::LoadOptions load;
      load.threads = 2;
      ds4::ContextOptions context;
      context.context_length = ctx;
      service.set_backend(ds4::serving::Ds4Backend::load(
          model_path, load, context, [&](double fraction, std::string_view) { service.set_load_progress(fraction); }));
    }
    std::cout << "READY" << std::endl;
  } catch (const std::exception& e) {
    spdlog::error("harness: loading failed: {}", e.what());
    service.set_load_failed(e.what());
  }

  // Stop on a signal or when the parent closes our stdin.
  std::thread stdin_watch([] {
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    g_stop = true;
  });
  stdin_watch.detach();
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  server->stop(std::chrono::seconds(5));
  service.stop(std::chrono::seconds(0));
  return 0;
}
