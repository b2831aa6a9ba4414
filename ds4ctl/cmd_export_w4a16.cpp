// `ds4ctl export-w4a16 SRC_DIR -o DIR [--max-shard-bytes N]`: the official checkpoint as a
// compressed-tensors W4A16 checkpoint for vLLM (toolchain/convert/export_w4a16.hpp), with the SNR
// of every tensor in DIR/w4a16.audit.{json,txt}.
#include <fmt/core.h>

#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/export_w4a16.hpp"

namespace {

struct Args {
  std::string src, out;
  uint64_t max_shard = 5'000'000'000ull;
};

ds4ctl::Register reg{
    "export-w4a16", "Export the official checkpoint as W4A16 (INT4 group-32 experts, FP8 attention) for vLLM",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<Args>();
      sub.add_option("SRC_DIR", a->src, "official checkpoint folder")->required()->check(CLI::ExistingDirectory);
      sub.add_option("-o,--output", a->out, "output folder")->required();
      sub.add_option("--max-shard-bytes", a->max_shard, "largest shard (default 5 GB)");
      return [a]() -> int {
        try {
          const auto r = ds4::convert::export_w4a16(a->src, a->out, {a->max_shard});
          fmt::print(
              "{}: {} tensors in {} shards, {:.1f} MiB; routed experts SNR {:.2f} dB\naudit: {}/w4a16.audit.txt\n",
              a->out, r.tensors.size(), r.shards, r.bytes / 1048576.0, r.expert_snr_db, a->out);
          return 0;
        } catch (const std::exception& e) {
          fmt::print(stderr, "ds4ctl export-w4a16: {}\n", e.what());
          return 1;
        }
      };
    }};

}  // namespace
