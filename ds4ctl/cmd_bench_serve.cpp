// ds4ctl bench-serve: what the batched worker gives concurrent clients, measured side by side in
// one run through the serving layer itself (the Service with max_batch slots, as ds4d runs it).
//
// Part 1: N greedy clients submit at once (N = 1, 2, 4, 8 by default), each its own prompt;
// aggregate tok/s is all completion tokens over the wall time until the last one ends, and every
// client's output is checked against the same job served alone. Part 2: one client decoding
// alone, then again while a long prompt arrives; the inter-token gaps' p50/p99 of the running
// client in both. The columns and the measurements: docs/batching.md §serving-benchmark.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/count_list.hpp"
#include "ds4ctl/default_model.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using ds4::serving::Token;

struct ServeBenchOptions {
  std::string model_path;
  unsigned threads = 0;
  std::vector<uint32_t> clients{1, 2, 4, 8};
  uint32_t prompt = 64;  // prompt tokens per client
  uint32_t tokens = 32;  // completion tokens per client
  uint32_t long_prompt = 4096;
  uint32_t beside = 64;  // at most this many prefill tokens a step takes beside decode rows
  uint32_t repeats = 3;
  double latency_ratio = 3.0;  // a step with prefill beside decode rows vs a decode-only step
};

// Records when each token's bytes arrived.
struct TimedSink : ds4::serving::GenerationSink {
  std::mutex mu;
  std::vector<Clock::time_point> arrivals;
  std::promise<ds4::serving::GenerationResult> done;
  bool on_text(std::string_view) override {
    std::lock_guard lock(mu);
    arrivals.push_back(Clock::now());
    return true;
  }
  void on_finished(const ds4::serving::GenerationResult& r) override { done.set_value(r); }
};

struct Job {
  std::shared_ptr<TimedSink> sink = std::make_shared<TimedSink>();
  std::future<ds4::serving::GenerationResult> result = sink->done.get_future();
  ds4::serving::CancelFlag cancel;
};

std::unique_ptr<Job> submit(ds4::serving::Service& s, std::vector<Token> prompt, uint32_t tokens) {
  auto job = std::make_unique<Job>();
  ds4::serving::GenerationJob g;
  g.prompt = std::move(prompt);
  g.sampling.temperature = 0;
  g.max_tokens = tokens;
  g.sink = job->sink;
  job->cancel = g.cancelled;
  if (auto refusal = s.submit(std::move(g))) throw std::runtime_error("the service refused a job: " + refusal->message);
  return job;
}

std::vector<Token> prompt_of(const ds4::serving::EngineBackend& b, size_t client, uint32_t n) {
  std::vector<Token> p;
  std::string text = fmt::format("<｜begin▁of▁sentence｜><｜User｜>Client {} asks:", client);
  while (p.size() < n) {
    text += fmt::format(" item {} of list {},", p.size(), client);
    p = b.encode(text);
  }
  p.resize(n);
  return p;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * double(v.size() - 1) + 0.5))];
}

std::unique_ptr<ds4::serving::Service> make_service(std::shared_ptr<ds4::serving::Ds4Backend> backend, size_t max_batch,
                                                    const ServeBenchOptions& o, ds4::serving::Metrics& metrics) {
  ds4::serving::ServiceConfig c;
  c.max_batch = max_batch;
  c.max_queued_jobs = 256;
  c.prefill_tokens_beside_decode = o.beside;
  c.prefill_latency_ratio = o.latency_ratio;
  auto s = std::make_unique<ds4::serving::Service>(c, metrics);
  s->set_backend(std::move(backend));
  return s;
}

int run_bench_serve(const ServeBenchOptions& o) {
  ds4::LoadOptions load;
  load.threads = o.threads;
  ds4::ContextOptions ctx;
  ctx.context_length = std::max<uint32_t>(o.long_prompt + o.tokens + 64, o.prompt + o.tokens + 64);
  auto backend = ds4::serving::Ds4Backend::load(o.model_path, load, ctx);
  const uint32_t most = *std::max_element(o.clients.begin(), o.clients.end());
  ds4::serving::Metrics metrics;

  // Each client's output served alone: the reference every level is checked against.
  std::vector<std::vector<Token>> alone(most);
  {
    auto s = make_service(backend, 1, o, metrics);
    for (uint32_t c = 0; c < most; c++)
      alone[c] = submit(*s, prompt_of(*backend, c, o.prompt), o.tokens)->result.get().completion;
  }

  struct Level {
    uint32_t n;
    std::vector<double> seconds;
  };
  std::vector<Level> levels;
  for (uint32_t n : o.clients) levels.push_back({n, {}});
  bool same = true;
  for (uint32_t r = 0; r < o.repeats; r++)
    for (Level& l : levels) {
      auto s = make_service(backend, l.n, o, metrics);
      std::vector<std::unique_ptr<Job>> jobs;
      const auto t0 = Clock::now();
      for (uint32_t c = 0; c < l.n; c++) jobs.push_back(submit(*s, prompt_of(*backend, c, o.prompt), o.tokens));
      for (uint32_t c = 0; c < l.n; c++) {
        const auto result = jobs[c]->result.get();
        if (result.completion != alone[c]) {
          same = false;
          fmt::print(stderr, "client {} of {}: output differs from the same job served alone\n", c, l.n);
        }
      }
      l.seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }

  fmt::print("{} prompt + {} completion tokens per client, {} repeats, medians; outputs {} to each served alone\n",
             o.prompt, o.tokens, o.repeats, same ? "identical" : "NOT IDENTICAL");
  fmt::print("{:>8} {:>10} {:>16} {:>18} {:>7}\n", "clients", "wall s", "aggregate tok/s", "per-client tok/s", "ratio");
  double base = 0;
  for (const Level& l : levels) {
    std::vector<double> v = l.seconds;
    const double t = percentile(v, 0.5), agg = double(l.n) * o.tokens / t;
    if (base == 0) base = agg;
    fmt::print("{:>8} {:>10.3f} {:>16.2f} {:>18.2f} {:>6.2f}x\n", l.n, t, agg, agg / l.n, agg / base);
  }

  // Inter-token latency of a running client, alone and while a long prompt arrives.
  auto gaps_of = [](const TimedSink& sink) {
    std::vector<double> g;
    for (size_t i = 1; i < sink.arrivals.size(); i++)
      g.push_back(std::chrono::duration<double>(sink.arrivals[i] - sink.arrivals[i - 1]).count());
    return g;
  };
  const uint32_t run_tokens = std::max<uint32_t>(o.tokens, 64);
  std::vector<double> idle, busy, prefill_alone, prefill_beside;
  for (uint32_t r = 0; r < o.repeats; r++) {
    auto s = make_service(backend, 2, o, metrics);
    {
      const auto t0 = Clock::now();
      submit(*s, prompt_of(*backend, 3, o.long_prompt), 1)->result.get();
      prefill_alone.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    auto lone = submit(*s, prompt_of(*backend, 0, o.prompt), run_tokens);
    lone->result.get();
    for (double g : gaps_of(*lone->sink)) idle.push_back(g);
    auto running = submit(*s, prompt_of(*backend, 1, o.prompt), 1000000);  // until the prompt is in
    while (true) {  // the long prompt arrives once the client streams
      {
        std::lock_guard lock(running->sink->mu);
        if (running->sink->arrivals.size() >= 4) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    auto big = submit(*s, prompt_of(*backend, 2, o.long_prompt), 1);
    const auto prefill_start = Clock::now();
    big->result.get();
    const auto prefill_end = Clock::now();
    prefill_beside.push_back(std::chrono::duration<double>(prefill_end - prefill_start).count());
    running->cancel->store(true);
    running->result.get();
    // Only the gaps that ended while the long prompt was going in.
    const auto& a = running->sink->arrivals;
    for (size_t i = 1; i < a.size(); i++)
      if (a[i] > prefill_start && a[i - 1] < prefill_end)
        busy.push_back(std::chrono::duration<double>(a[i] - a[i - 1]).count());
  }
  const double idle50 = percentile(idle, 0.5), idle99 = percentile(idle, 0.99);
  const double busy50 = percentile(busy, 0.5), busy99 = percentile(busy, 0.99);
  fmt::print(
      "\ninter-token gaps of a running client, {} repeats (prefill beside it: at most {} tokens and {:.1f}x a decode "
      "step)\n",
      o.repeats, o.beside, o.latency_ratio);
  fmt::print("{:>32} {:>8} {:>10} {:>10}\n", "", "gaps", "p50 ms", "p99 ms");
  fmt::print("{:>32} {:>8} {:>10.2f} {:>10.2f}\n", "alone", idle.size(), 1e3 * idle50, 1e3 * idle99);
  fmt::print("{:>32} {:>8} {:>10.2f} {:>10.2f}\n", fmt::format("while a {}-token prompt arrives", o.long_prompt),
             busy.size(), 1e3 * busy50, 1e3 * busy99);
  fmt::print("p99 ratio {:.2f}x\n", idle99 > 0 ? busy99 / idle99 : 0.0);
  const double pa = percentile(prefill_alone, 0.5), pb = percentile(prefill_beside, 0.5);
  fmt::print(
      "the {}-token prompt's own time to first token: alone {:.3f} s, beside the running client {:.3f} s ({:.2f}x)\n",
      o.long_prompt, pa, pb, pa > 0 ? pb / pa : 0.0);
  return same ? 0 : 1;
}

ds4ctl::Register reg{
    "bench-serve", "Measure concurrent clients through the batched worker against one, side by side",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<ServeBenchOptions>();
      o->model_path = ds4ctl::default_model_path();
      sub.add_option("-m,--model", o->model_path, "GGUF model file (default: the embedded model)")
          ->check(CLI::ExistingFile)
          ->capture_default_str();
      sub.add_option("-t,--threads", o->threads, "Worker threads; 0 uses every core")->capture_default_str();
      sub.add_option_function<std::string>(
          "--clients",
          [o](const std::string& s) {
            o->clients = ds4ctl::parse_count_list("--clients", s, 1, 64, "a client count (1..64)");
          },
          "Comma-separated client counts (default 1,2,4,8)");
      sub.add_option("--prompt", o->prompt, "Prompt tokens per client")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--tokens", o->tokens, "Completion tokens per client")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--long-prompt", o->long_prompt, "Tokens of the prompt that arrives during part 2")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--beside", o->beside, "Prefill tokens a step takes beside decode rows")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--latency-ratio", o->latency_ratio,
                     "How many times a decode-only step a step with prefill beside decode rows may take")
          ->capture_default_str()
          ->check(CLI::Range(1.0, 100.0));
      sub.add_option("--repeats", o->repeats, "Repeats (medians)")->capture_default_str()->check(CLI::PositiveNumber);
      return [o] {
        if (std::find(o->clients.begin(), o->clients.end(), 1u) == o->clients.end())
          o->clients.insert(o->clients.begin(), 1u);  // the ratios' baseline
        std::sort(o->clients.begin(), o->clients.end());
        return run_bench_serve(*o);
      };
    }};

}  // namespace
