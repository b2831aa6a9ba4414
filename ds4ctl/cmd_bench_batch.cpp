// ds4ctl bench-batch: what continuous batching buys, measured side by side in one run.
//
// N greedy sessions decode together through one ds4::BatchStep per step, each level timed in turn
// per repeat, medians over the repeats; the "solo" row is one session through Context::decode.
// Before timing, a check compares every logit of the largest level bit for bit with twins decoding
// alone. The columns and the measurements: docs/batching.md §benchmark.
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/count_list.hpp"
#include "ds4ctl/default_model.hpp"
#include "engine/model/batch_step.hpp"
#include "engine/model/model.hpp"
#include "engine/sampler/random.hpp"
#include "engine/sampler/sampler.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct BatchBenchOptions {
  std::string model_path;
  unsigned threads = 0;
  std::vector<uint32_t> sessions{1, 2, 4, 8};
  uint32_t context = 128;
  uint32_t steps = 8;
  uint32_t repeats = 5;
  bool exact = false;
};

std::vector<int32_t> synthetic_prompt(uint32_t n, uint32_t n_vocab, uint64_t seed) {
  ds4::sampler::Xoshiro256 rng(seed);
  std::vector<int32_t> ids(n);
  for (uint32_t i = 0; i < n; ++i) ids[i] = i == 0 ? 0 : static_cast<int32_t>(rng.next() % n_vocab);
  return ids;
}

// N sessions decoding greedily, session i (from `first`) at position context + i.
struct Level {
  uint32_t n = 0;  // 0: the solo row (one session through Context::decode)
  std::vector<std::unique_ptr<ds4::Context>> ctx;
  std::vector<int32_t> next;  // each session's next token
  std::vector<double> step_seconds, cpu_seconds;

  Level(const std::shared_ptr<ds4::Model>& m, uint32_t n_, const BatchBenchOptions& o, uint32_t first = 0) : n(n_) {
    for (uint32_t i = first; i < first + std::max(1u, n); i++) {
      const uint32_t capacity = o.context + i + (o.repeats + 2) * o.steps + 8;
      ctx.push_back(std::make_unique<ds4::Context>(m, ds4::ContextOptions{capacity}));
      const auto l = ctx.back()->prefill(synthetic_prompt(o.context + i, m->info().n_vocab, 1000 + i));
      next.push_back(ds4::sampler::argmax(l));
    }
  }

  void step(ds4::BatchStep& batch, std::vector<ds4::BatchEntry>& entries) {
    if (n == 0) {
      next[0] = ds4::sampler::argmax(ctx[0]->decode(next[0]));
      return;
    }
    entries.clear();
    for (uint32_t i = 0; i < n; i++) entries.push_back({ctx[i].get(), std::span<const int32_t>(&next[i], 1)});
    batch.run(entries);
    for (uint32_t i = 0; i < n; i++) next[i] = ds4::sampler::argmax(ctx[i]->logits());
  }
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

// The largest level for a few steps, batched and alone: every logit must match bit for bit.
bool check_identical(const std::shared_ptr<ds4::Model>& m, uint32_t n, const BatchBenchOptions& o) {
  Level batched(m, n, o);
  std::vector<std::unique_ptr<Level>> alone;
  for (uint32_t i = 0; i < n; i++) alone.push_back(std::make_unique<Level>(m, 0, o, i));
  ds4::BatchStep batch(m);
  std::vector<ds4::BatchEntry> entries;
  for (int k = 0; k < 4; k++) {
    batched.step(batch, entries);
    for (uint32_t i = 0; i < n; i++) {
      alone[i]->step(batch, entries);
      const auto a = batched.ctx[i]->logits(), b = alone[i]->ctx[0]->logits();
      if (a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) return false;
    }
  }
  return true;
}

int run_bench_batch(const BatchBenchOptions& o) {
  ds4::LoadOptions load;
  load.threads = o.threads;
  load.arithmetic = o.exact ? ds4::Arithmetic::Exact : ds4::Arithmetic::Fast;
  std::shared_ptr<ds4::Model> model = ds4::Model::load(o.model_path, load);
  const ds4::ModelInfo& info = model->info();
  const uint32_t largest = *std::max_element(o.sessions.begin(), o.sessions.end());
  fmt::print("model: {} ({} layers, {} experts x {} used), {} threads, {} arithmetic\n",
             info.name.empty() ? o.model_path : info.name, info.n_layer, info.n_expert, info.n_expert_used,
             info.threads, o.exact ? "exact" : "fast");
  const bool same = check_identical(model, largest, o);
  fmt::print("logits of {} batched sessions vs each served alone, 4 steps: {}\n", largest,
             same ? "bit-identical" : "DIFFERENT");

  std::vector<std::unique_ptr<Level>> levels;
  levels.push_back(std::make_unique<Level>(model, 0, o));
  for (uint32_t n : o.sessions) levels.push_back(std::make_unique<Level>(model, n, o));
  ds4::BatchStep batch(model);
  std::vector<ds4::BatchEntry> entries;
  for (auto& l : levels) l->step(batch, entries);  // untimed: first touch of the experts they choose
  for (uint32_t r = 0; r < o.repeats; r++)
    for (auto& l : levels) {
      const auto t0 = Clock::now();
      const double c0 = process_cpu_seconds();
      for (uint32_t s = 0; s < o.steps; s++) l->step(batch, entries);
      l->step_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / o.steps);
      l->cpu_seconds.push_back((process_cpu_seconds() - c0) / o.steps);
    }

  fmt::print("context {}..{} tokens, {} steps x {} repeats, medians (min..max of the repeats' step time)\n", o.context,
             o.context + largest - 1, o.steps, o.repeats);
  fmt::print("{:>9} {:>10} {:>20} {:>16} {:>18} {:>7} {:>12} {:>10}\n", "sessions", "ms/step", "(min..max)",
             "aggregate tok/s", "per-session tok/s", "ratio", "CPU ms/step", "CPU ratio");
  double base = 0, cpu_base = 0;
  for (auto& l : levels)
    if (l->n == 1) {
      base = 1.0 / median(l->step_seconds);
      cpu_base = 1.0 / median(l->cpu_seconds);
    }
  for (auto& l : levels) {
    const double t = median(l->step_seconds), c = median(l->cpu_seconds), n = std::max(1u, l->n);
    const auto [lo, hi] = std::minmax_element(l->step_seconds.begin(), l->step_seconds.end());
    fmt::print("{:>9} {:>10.2f} {:>20} {:>16.2f} {:>18.2f} {:>6.2f}x {:>12.2f} {:>9.2f}x\n",
               l->n == 0 ? std::string("1 (solo)") : fmt::format("{}", l->n), 1e3 * t,
               fmt::format("({:.2f}..{:.2f})", 1e3 * *lo, 1e3 * *hi), n / t, 1.0 / t, n / t / base, 1e3 * c,
               n / c / cpu_base);
  }
  return same ? 0 : 1;
}

ds4ctl::Register reg{
    "bench-batch", "Measure batched decode of several sessions against one, side by side",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<BatchBenchOptions>();
      o->model_path = ds4ctl::default_model_path();
      sub.add_option("-m,--model", o->model_path, "GGUF model file (default: the embedded model)")
          ->check(CLI::ExistingFile)
          ->capture_default_str();
      sub.add_option("-t,--threads", o->threads, "Worker threads; 0 uses every core")->capture_default_str();
      sub.add_option_function<std::string>(
          "--sessions",
          [o](const std::string& s) {
            o->sessions = ds4ctl::parse_count_list("--sessions", s, 1, 256, "a session count (1..256)");
          },
          "Comma-separated session counts (default 1,2,4,8)");
      sub.add_option("--context", o->context, "Prompt tokens of session 0 (session i: + i)")->capture_default_str();
      sub.add_option("--steps", o->steps, "Timed decode steps per level and repeat")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--repeats", o->repeats, "Repeats (the table shows medians)")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_flag("--exact", o->exact, "Exact arithmetic (bit-identical to the reference engine)");
      return [o] {
        if (std::find(o->sessions.begin(), o->sessions.end(), 1u) == o->sessions.end())
          o->sessions.insert(o->sessions.begin(), 1u);  // the ratios' baseline
        return run_bench_batch(*o);
      };
    }};

}  // namespace
