// ds4ctl bench: prefill and decode speed of a model on this machine, against its roofline
// (min of memory bandwidth and the per-type kernel throughput, weighted by bytes per token), both
// measured in the same run so the ratio needs no outside numbers. Decode is measured at several
// context lengths; prompts are deterministic pseudo-random ids. What each column is:
// docs/benchmarks.md §ds4ctl-bench.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/count_list.hpp"
#include "engine/cuda/backend_choice.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/pass_graph.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/kernels/thread_pool.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/model.hpp"
#include "engine/quant/quant.hpp"
#include "engine/sampler/random.hpp"
#include "engine/sampler/sampler.hpp"
#include "toolchain/bench/kernel_bench.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using ds4::quant::Type;

struct BenchOptions {
  std::string model_path;
  unsigned threads = 0;
  std::string backend = "auto";  // --backend: engine/cuda/backend_choice.hpp
  std::vector<uint32_t> contexts{0, 512, 2048};
  uint32_t decode_tokens = 16;
  bool kernels = false;
  bool exact = false;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string type_name(Type t) { return std::string(ds4::quant::type_info(t).name); }

std::string mib(double bytes) { return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0)); }

// Weight bytes one decoded token reads, per tensor type.
std::map<Type, double> weight_bytes_per_token(const ds4::gguf::GgufFile& file, const ds4::ModelInfo& info) {
  std::map<Type, double> bytes;
  const double expert_share = info.n_expert ? static_cast<double>(info.n_expert_used) / info.n_expert : 1.0;
  for (const ds4::gguf::TensorInfo& t : file.tensors()) {
    const std::string_view name = t.name;
    double b = static_cast<double>(t.n_bytes);
    if (name.find("_exps.") != std::string_view::npos)
      b *= expert_share;  // routed experts: only the chosen ones are read
    else if (name.starts_with("token_embd.") || name.find("tid2eid") != std::string_view::npos)
      b = static_cast<double>(t.row_bytes());  // row gathers: one row per token
    bytes[t.type] += b;
  }
  return bytes;
}

// Types whose matmul the kernel library can measure (those with a weight dot product).
bool has_dot(Type t) {
  try {
    return ds4::quant::traits(t).has_dot;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

void print_kernel_table(ds4::kernels::ThreadPool& pool, double memory_gbs) {
  const ds4::quant::Isa isa = ds4::quant::best_isa();
  fmt::print("kernels ({}, {} threads): weight bytes consumed per second by a one-row matmul\n",
             ds4::quant::isa_name(isa), pool.size());
  fmt::print("  {:<8} {:>14} {:>14} {:>16}\n", "type", "in-cache GB/s", "stream GB/s", "stream/memory");
  for (Type t : {Type::F32, Type::F16, Type::BF16, Type::Q8_0, Type::Q4_K, Type::Q2_K, Type::IQ2_XXS, Type::MXFP4}) {
    if (!has_dot(t)) continue;
    const double cached = ds4::kernels::measure_dot_gbs(t, true, pool, isa);
    const double streamed = ds4::kernels::measure_dot_gbs(t, false, pool, isa);
    fmt::print("  {:<8} {:>14.2f} {:>14.2f} {:>15.0f}%\n", type_name(t), cached, streamed,
               100.0 * streamed / memory_gbs);
  }
  fmt::print("  memory read bandwidth: {:.2f} GB/s\n\n", memory_gbs);
}

struct Roofline {
  double bytes_per_token = 0;
  double memory_gbs = 0;
  double kernel_gbs = 0;
  double gbs() const { return std::min(memory_gbs, kernel_gbs); }
};

Roofline measure_roofline(const std::map<Type, double>& bytes, ds4::kernels::ThreadPool& pool, double memory_gbs) {
  const ds4::quant::Isa isa = ds4::quant::best_isa();
  Roofline r;
  r.memory_gbs = memory_gbs;
  double total = 0, kernel_seconds = 0;
  fmt::print("weights read per decoded token\n");
  fmt::print("  {:<8} {:>14} {:>7} {:>18}\n", "type", "bytes/token", "share", "kernel GB/s");
  for (const auto& [type, b] : bytes) total += b;
  for (const auto& [type, b] : bytes) {
    std::string kernel = "- (gather)";
    if (has_dot(type)) {
      const double g = ds4::kernels::measure_dot_gbs(type, true, pool, isa);
      kernel_seconds += b / (g * 1e9);
      kernel = fmt::format("{:.2f}", g);
    } else {
      kernel_seconds += b / (memory_gbs * 1e9);  // no compute: read at memory speed
    }
    fmt::print("  {:<8} {:>14} {:>6.1f}% {:>18}\n", type_name(type), mib(b), 100.0 * b / total, kernel);
  }
  r.bytes_per_token = total;
  r.kernel_gbs = kernel_seconds > 0 ? total / kernel_seconds / 1e9 : memory_gbs;
  return r;
}

// Deterministic prompt: BOS-like id 0 first, then pseudo-random ids.
std::vector<int32_t> synthetic_prompt(uint32_t n, uint32_t n_vocab) {
  ds4::sampler::Xoshiro256 rng(n);
  std::vector<int32_t> ids(n);
  for (uint32_t i = 0; i < n; ++i) ids[i] = i == 0 ? 0 : static_cast<int32_t>(rng.next() % n_vocab);
  return ids;
}

int run_bench(const BenchOptions& o) {
  // --backend cuda without a usable GPU is refused (naming what is missing) before anything runs.
  const ds4::cuda::Backend backend = ds4::cuda::parse_backend(o.backend);
  if (backend == ds4::cuda::Backend::Cuda) ds4::cuda::choose_backend(backend);
  ds4::kernels::ThreadPool probe_pool(o.threads);
  const double memory_gbs = ds4::kernels::measure_read_bandwidth_gbs(probe_pool);
  if (o.kernels) print_kernel_table(probe_pool, memory_gbs);
  if (o.model_path.empty()) return 0;

  ds4::LoadOptions load;
  load.threads = o.threads;
  load.arithmetic = o.exact ? ds4::Arithmetic::Exact : ds4::Arithmetic::Fast;
  const auto t_load = Clock::now();
  std::shared_ptr<ds4::Model> model = ds4::load_model_on(backend, o.model_path, load, [](const std::string& l) {
                                        fmt::print(stderr, "{}\n", l);
                                      }).model;
  const ds4::ModelInfo& info = model->info();
  fmt::print(
      "model: {} ({} layers, {} experts x {} used, experts {}), {} threads, {} "
      "arithmetic, loaded in {:.2f} s\n",
      info.name.empty() ? o.model_path : info.name, info.n_layer, info.n_expert, info.n_expert_used, info.expert_types,
      info.threads, o.exact ? "exact" : "fast", seconds_since(t_load));
  fmt::print("  weights {} in file, {} active per token (ModelInfo)\n\n", mib(static_cast<double>(info.weight_bytes)),
             mib(static_cast<double>(info.active_weight_bytes_per_token)));

  const Roofline roof = measure_roofline(weight_bytes_per_token(model->gguf(), info), probe_pool, memory_gbs);
  fmt::print("  total    {:>14}\n", mib(roof.bytes_per_token));
  // The roofline is the CPU's (its read bandwidth and kernels); on the GPU the last column is left
  // out: scripts/gpu-check.sh divides eff GB/s by the device's copy bandwidth instead.
  const bool on_gpu = info.device == ds4::ComputeDevice::Cuda;
  fmt::print(
      "roofline{}: memory {:.2f} GB/s, kernels {:.2f} GB/s -> {:.2f} GB/s ({} bound), "
      "{:.2f} tok/s\n\n",
      on_gpu ? " of the CPU (the model runs on the GPU)" : "", roof.memory_gbs, roof.kernel_gbs, roof.gbs(),
      roof.memory_gbs <= roof.kernel_gbs ? "memory" : "kernel", roof.gbs() * 1e9 / roof.bytes_per_token);

  // On the GPU, kernel launches per token (prefill/decode; cuda::Device::launches): a few
  // microseconds each, so a pass's launch count bounds its speed (docs/cuda.md §attention-rows).
  const auto launches = [&] { return on_gpu ? ds4::cuda::Device::open().launches() : 0; };
  // On the GPU the decode loop runs twice, with its passes as CUDA graphs and then launched one by
  // one, so the last column is the graphs' gain measured side by side (docs/cuda.md §graphs).
  fmt::print("{:>8} {:>14} {:>13} {:>10} {:>10} {:>10} {:>14} {:>8}\n", "context", "prefill tok/s", "decode tok/s",
             "ms/token", "eff GB/s", "roofline", "launches/tok", "graphs");
  std::vector<uint32_t> contexts = o.contexts;
  std::sort(contexts.begin(), contexts.end());
  for (uint32_t n_ctx : contexts) {
    const uint32_t capacity = n_ctx + (on_gpu ? 2 : 1) * o.decode_tokens + 2;
    ds4::Context ctx(model, ds4::ContextOptions{capacity});
    std::string prefill_rate = "-", prefill_launches = "-";
    std::span<const float> logits;
    if (n_ctx > 0) {
      const std::vector<int32_t> prompt = synthetic_prompt(n_ctx, info.n_vocab);
      const uint64_t l0 = launches();
      const auto t0 = Clock::now();
      logits = ctx.prefill(prompt);
      prefill_rate = fmt::format("{:.2f}", n_ctx / seconds_since(t0));
      prefill_launches = fmt::format("{:.1f}", double(launches() - l0) / n_ctx);
    } else {
      logits = ctx.decode(0);  // start an empty context; also warms the weights
    }
    // One untimed step so that page faults of experts not yet touched are not billed to decode.
    logits = ctx.decode(ds4::sampler::argmax(logits));
    const uint64_t l0 = launches();
    const auto t0 = Clock::now();
    for (uint32_t i = 0; i < o.decode_tokens; ++i) logits = ctx.decode(ds4::sampler::argmax(logits));
    const double s = seconds_since(t0);
    std::string graphs = "-";
    if (on_gpu && ds4::cuda::PassGraph::enabled()) {
      ds4::cuda::PassGraph::set_enabled(false);
      const auto t1 = Clock::now();
      for (uint32_t i = 0; i < o.decode_tokens; ++i) logits = ctx.decode(ds4::sampler::argmax(logits));
      graphs = fmt::format("{:.2f}x", seconds_since(t1) / s);
      ds4::cuda::PassGraph::set_enabled(true);
    }
    const std::string per_token =
        on_gpu ? fmt::format("{}/{:.0f}", prefill_launches, double(launches() - l0) / o.decode_tokens) : "-";
    const double tok_s = o.decode_tokens / s;
    const double eff_gbs = roof.bytes_per_token * tok_s / 1e9;
    const std::string of_roof = on_gpu ? "-" : fmt::format("{:.0f}%", 100.0 * eff_gbs / roof.gbs());
    fmt::print("{:>8} {:>14} {:>13.2f} {:>10.2f} {:>10.2f} {:>10} {:>14} {:>8}\n", n_ctx, prefill_rate, tok_s,
               1e3 * s / o.decode_tokens, eff_gbs, of_roof, per_token, graphs);
  }
  return 0;
}

ds4ctl::Register reg{
    "bench", "Measure prefill/decode speed against the memory and kernel roofline", [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<BenchOptions>();
      sub.add_option("-m,--model", o->model_path, "GGUF model file (optional with --kernels)")
          ->check(CLI::ExistingFile);
      sub.add_option("-t,--threads", o->threads, "Worker threads; 0 uses every core")->capture_default_str();
      sub.add_option("--backend", o->backend, "auto, cpu or cuda (auto: the GPU when one is usable)")
          ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
          ->capture_default_str();
      sub.add_option_function<std::string>(
          "--contexts",
          [o](const std::string& s) {
            o->contexts = ds4ctl::parse_count_list("--contexts", s, 0, 1u << 30, "a token count");
          },
          "Comma-separated context lengths to decode at (default 0,512,2048)");
      sub.add_option("--decode-tokens", o->decode_tokens, "Timed decode steps per context")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_flag("--kernels", o->kernels, "Also print the per-type kernel throughput table");
      sub.add_flag("--exact", o->exact, "Exact arithmetic (bit-identical to the reference engine)");
      return [o] {
        if (o->model_path.empty() && !o->kernels) throw CLI::RequiredError("-m,--model (or --kernels alone)");
        return run_bench(*o);
      };
    }};

}  // namespace
