// `ds4ctl forge --preset tiny|bench --seed S -o FILE.gguf`: writes a DS4-layout GGUF with random
// weights (toolchain/forge). Same preset and seed give the same bytes. Prints the file size,
// the weight bytes and the weight bytes one decoded token reads. --mtp also writes OUT.mtp.gguf,
// a random-weight MTP drafter bound to the forged model (forge.hpp forge_drafter).
#include <fmt/core.h>

#include <chrono>
#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/forge/forge.hpp"

namespace {

struct ForgeArgs {
  std::string preset = "tiny";
  uint64_t seed = 1;
  std::string out;
  int64_t pool_rows = -1;  // -1: the preset's
  bool mtp = false;
};

int run_forge(const ForgeArgs& a) {
  using namespace ds4::gguf::forge;
  ForgePreset preset = forge_preset(a.preset);
  if (a.pool_rows >= 0) preset.expert_pool_rows = static_cast<uint32_t>(a.pool_rows);
  const auto t0 = std::chrono::steady_clock::now();
  const ForgeSummary s = forge_model(preset, a.seed, a.out);
  const auto mib = [](uint64_t b) { return b / double(1 << 20); };
  fmt::print("{}: preset {}, seed {}, {} tensors, {} bytes ({:.1f} MiB), weights {:.1f} MiB\n", a.out, a.preset, a.seed,
             s.n_tensors, s.file_bytes, mib(s.file_bytes), mib(s.weight_bytes));
  fmt::print("bytes-per-token: {} ({:.1f} MiB of weights read per decoded token)\n", s.decode_bytes_per_token,
             mib(s.decode_bytes_per_token));
  if (a.mtp) {
    const std::string side = ds4::convert::sidecar_path_for(a.out);
    const ForgeSummary m = forge_drafter(preset, a.seed, a.out, side);
    fmt::print("{}: MTP drafter of {}, {} tensors, {} bytes ({:.1f} MiB)\n", side, a.out, m.n_tensors, m.file_bytes,
               mib(m.file_bytes));
  }
  fmt::print("forged in {:.1f} s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

ds4ctl::Register reg{"forge", "Write a DS4-layout GGUF with random weights (tiny: tests, bench: benchmarks)",
                     [](CLI::App& sub) -> ds4ctl::RunFn {
                       auto a = std::make_shared<ForgeArgs>();
                       sub.add_option("--preset", a->preset, "model size preset")
                           ->check(CLI::IsMember(ds4::gguf::forge::forge_preset_names()));
                       sub.add_option("--seed", a->seed, "random seed (same seed, same bytes)");
                       sub.add_option("--expert-pool-rows", a->pool_rows,
                                      "distinct quantized rows per routed-expert tensor, tiled (0: all rows; "
                                      "default: the preset's)")
                           ->check(CLI::Range(0, 1 << 30));
                       sub.add_option("-o,--output", a->out, "output GGUF path")->required();
                       sub.add_flag("--mtp", a->mtp,
                                    "also write OUT.mtp.gguf: a random-weight MTP drafter bound to the forged model");
                       return [a] { return run_forge(*a); };
                     }};

}  // namespace
