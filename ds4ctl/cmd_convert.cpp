// `ds4ctl convert SRC_DIR -o OUT.gguf --recipe q2|q4|mxfp4|FILE.toml [--imatrix F] [--threads N]`: the
// official DS4 Flash checkpoint to the GGUF this engine loads (toolchain/convert). Writes the audit
// next to the output (OUT.audit.json, OUT.audit.txt). Interrupted runs resume when rerun with
// the same arguments. Progress: a bar with ETA on a terminal, one plain line per ~5% otherwise.
// Exit status: 0 done, 1 conversion error (message names file and tensor), 2 usage.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "engine/gguf/gguf_error.hpp"
#include "toolchain/convert/audit.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/converter.hpp"

namespace {

struct ConvertArgs {
  std::string src, out, recipe = "q2", imatrix;
  unsigned threads = 1;
};

std::string hms(double s) {
  const int t = static_cast<int>(s + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60) : fmt::format("{}m{:02}s", t / 60, t % 60);
}

int run_convert(const ConvertArgs& a) {
  using namespace ds4::convert;
  ConvertOptions o;
  o.source_dir = a.src;
  o.output = a.out;
  o.recipe = a.recipe;
  o.threads = a.threads;
  o.imatrix = a.imatrix;
  const bool tty = ::isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  int last_step = -1;
  o.progress = [&](const Progress& p) {
    const double f = p.source_bytes_total ? double(p.source_bytes_done) / double(p.source_bytes_total) : 1.0;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double eta = f > 0.001 ? el * (1 - f) / f : 0;
    if (tty) {
      const int w = 30, fill = static_cast<int>(f * w);
      fmt::print(stderr, "\r[{}{}] {:5.1f}%  {}/{} tensors  {:.2f} GB/s  ETA {}  {:<40.40}", std::string(fill, '#'),
                 std::string(w - fill, '.'), 100 * f, p.tensors_done, p.tensors_total,
                 el > 0 ? p.source_bytes_done / el / 1e9 : 0.0, hms(eta), p.current);
    } else if (static_cast<int>(f * 20) != last_step) {
      last_step = static_cast<int>(f * 20);
      fmt::print(stderr, "convert: {:5.1f}% {}/{} tensors, {:.1f} s elapsed, ETA {} ({})\n", 100 * f, p.tensors_done,
                 p.tensors_total, el, hms(eta), p.current);
    }
  };
  try {
    const ConvertResult r = convert_checkpoint(o);
    if (tty) fmt::print(stderr, "\n");
    const std::string audit = write_audit(r);
    fmt::print("{}: {} tensors, {:.1f} MiB from {:.1f} MiB of source in {:.1f} s ({:.3f} GB/s, {} threads)\n", r.output,
               r.tensors.size(), r.output_bytes / 1048576.0, r.source_bytes / 1048576.0, r.seconds,
               r.seconds > 0 ? r.source_bytes / r.seconds / 1e9 : 0.0, r.threads);
    if (r.resumed_tensors)
      fmt::print("resumed: {} tensors were finished by an earlier run (verified)\n", r.resumed_tensors);
    fmt::print("peak RSS {:.1f} MiB\n", r.peak_rss_bytes / 1048576.0);
    for (const Invariant& i : r.invariants) fmt::print("invariant {:<17} ok  {}\n", i.name, i.detail);
    fmt::print("artifact {}  source fingerprint {}\naudit: {}\n", r.artifact_id, r.source_fingerprint, audit);
    return 0;
  } catch (const std::exception& e) {
    if (tty) fmt::print(stderr, "\n");
    fmt::print(stderr, "ds4ctl convert: {}\n", e.what());
    return 1;
  }
}

ds4ctl::Register reg{
    "convert", "Convert the official DS4 Flash checkpoint (safetensors) to a GGUF by recipe, with audit",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<ConvertArgs>();
      sub.add_option("SRC_DIR", a->src, "checkpoint folder (*.safetensors, config.json, tokenizer.json)")->required();
      sub.add_option("-o,--output", a->out, "output GGUF path")->required();
      sub.add_option("--recipe", a->recipe, "q2, q4, mxfp4 or a recipe .toml file");
      sub.add_option("--threads", a->threads, "worker threads")->check(CLI::Range(1, 256));
      sub.add_option("--imatrix", a->imatrix, "GGML imatrix file (ds4ctl imatrix); hashed into the artifact id")
          ->check(CLI::ExistingFile);
      return [a] { return run_convert(*a); };
    }};

}  // namespace
