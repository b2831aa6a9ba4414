// ds4ctl bench-threads: prefill and decode speed of one model at several thread counts,
// measured side by side in one run, with the ratio to the first count.
//
// The machines this runs on are often shared, so single timings are noise: the thread counts
// take turns (round r runs them in order, round r+1 in reverse) and the table shows medians
// over --repeat rounds. Each run is a fresh Context: prefill of --prompt tokens, then --decode
// greedy steps. System CPU time per run (getrusage) is printed too, because the cost this
// command was written to catch is a system call per parallel region. The last logits of every
// run are compared bit for bit across thread counts (they must be equal, see
// docs/arithmetic.md §threads), and a mismatch is an error.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/default_model.hpp"
#include "engine/model/model.hpp"
#include "engine/sampler/random.hpp"
#include "engine/sampler/sampler.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model_path;
  std::vector<unsigned> threads{1, 2};
  uint32_t prompt = 64, decode = 64, repeat = 5;
  bool exact = false;
};

struct Sample {
  double prefill_s, decode_s, sys_s;
};

double sys_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_stime.tv_usec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Sample run_once(const std::shared_ptr<ds4::Model>& model, const std::vector<int32_t>& prompt, uint32_t decode,
                std::vector<float>& last_logits) {
  ds4::Context ctx(model, ds4::ContextOptions{static_cast<uint32_t>(prompt.size()) + decode + 2});
  const double sys0 = sys_seconds();
  const auto t0 = Clock::now();
  std::span<const float> logits = ctx.prefill(prompt);
  const auto t1 = Clock::now();
  for (uint32_t i = 0; i < decode; ++i) logits = ctx.decode(ds4::sampler::argmax(logits));
  const auto t2 = Clock::now();
  last_logits.assign(logits.begin(), logits.end());
  return {std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
          sys_seconds() - sys0};
}

int run(const Options& o) {
  const std::string path = o.model_path.empty() ? ds4ctl::default_model_path() : o.model_path;
  std::vector<std::shared_ptr<ds4::Model>> models;
  for (unsigned t : o.threads) {
    ds4::LoadOptions load;
    load.threads = t;
    load.arithmetic = o.exact ? ds4::Arithmetic::Exact : ds4::Arithmetic::Fast;
    models.push_back(ds4::Model::load(path, load));
  }
  const ds4::ModelInfo& info = models.front()->info();
  std::vector<int32_t> prompt(o.prompt);
  ds4::sampler::Xoshiro256 rng(o.prompt);
  for (uint32_t i = 0; i < o.prompt; ++i) prompt[i] = i == 0 ? 0 : static_cast<int32_t>(rng.next() % info.n_vocab);
  fmt::print("model: {} ({} layers), {} arithmetic; prompt {} tokens, decode {} tokens, {} rounds (medians)\n",
             info.name.empty() ? path : info.name, info.n_layer, o.exact ? "exact" : "fast", o.prompt, o.decode,
             o.repeat);

  const size_t k = o.threads.size();
  std::vector<std::vector<Sample>> samples(k);
  std::vector<std::vector<float>> logits(k);
  for (size_t i = 0; i < k; ++i) run_once(models[i], prompt, 1, logits[i]);  // warm-up: page in the weights
  for (uint32_t r = 0; r < o.repeat; ++r)
    for (size_t j = 0; j < k; ++j) {
      const size_t i = r % 2 ? k - 1 - j : j;
      samples[i].push_back(run_once(models[i], prompt, o.decode, logits[i]));
    }
  for (size_t i = 1; i < k; ++i)
    if (logits[i].size() != logits[0].size() ||
        std::memcmp(logits[i].data(), logits[0].data(), logits[0].size() * sizeof(float)) != 0)
      throw std::runtime_error(
          fmt::format("logits with {} threads differ from those with {} threads", o.threads[i], o.threads[0]));

  auto col = [&](size_t i, double Sample::*m) {
    std::vector<double> v;
    for (const Sample& s : samples[i]) v.push_back(s.*m);
    return median(v);
  };
  fmt::print("{:>8} {:>14} {:>8} {:>13} {:>8} {:>12}\n", "threads", "prefill tok/s", "ratio", "decode tok/s", "ratio",
             "sys s/run");
  const double p0 = col(0, &Sample::prefill_s), d0 = col(0, &Sample::decode_s);
  for (size_t i = 0; i < k; ++i) {
    const double p = col(i, &Sample::prefill_s), d = col(i, &Sample::decode_s);
    fmt::print("{:>8} {:>14.1f} {:>7.2f}x {:>13.1f} {:>7.2f}x {:>12.3f}\n", o.threads[i], o.prompt / p, p0 / p,
               o.decode / d, d0 / d, col(i, &Sample::sys_s));
  }
  fmt::print("last logits bit-identical across thread counts\n");
  return 0;
}

ds4ctl::Register reg{"bench-threads", "Compare prefill/decode speed at several thread counts in one run",
                     [](CLI::App& sub) -> ds4ctl::RunFn {
                       auto o = std::make_shared<Options>();
                       sub.add_option("-m,--model", o->model_path,
                                      "GGUF model file (default: the embedded agent model)")
                           ->check(CLI::ExistingFile);
                       sub.add_option("-t,--threads", o->threads, "Thread counts to compare (comma-separated)")
                           ->delimiter(',')
                           ->check(CLI::PositiveNumber)
                           ->capture_default_str();
                       sub.add_option("--prompt", o->prompt, "Prompt tokens prefilled per run")
                           ->check(CLI::PositiveNumber)
                           ->capture_default_str();
                       sub.add_option("--decode", o->decode, "Decode steps per run")->capture_default_str();
                       sub.add_option("--repeat", o->repeat, "Rounds; the table shows medians")
                           ->check(CLI::PositiveNumber)
                           ->capture_default_str();
                       sub.add_flag("--exact", o->exact, "Exact arithmetic (bit-identical to the reference engine)");
                       return [o] { return run(*o); };
                     }};

}  // namespace
