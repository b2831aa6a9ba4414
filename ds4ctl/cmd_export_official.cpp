// `ds4ctl export-official MODEL.gguf -o DIR [--shards N]`: writes a DS4 GGUF's weights as an
// official-format checkpoint (FP4 experts, FP8 attention and shared expert, BF16/F32 elsewhere,
// config.json, tokenizer.json, sharded safetensors): the fixture generator the converter's
// tests use, and the way a model trained here goes through the release's conversion path.
#include <fmt/core.h>

#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/export_official.hpp"

namespace {

struct ExportArgs {
  std::string model, out;
  unsigned shards = 3;
  bool mtp = false;
};

ds4ctl::Register reg{
    "export-official", "Write a DS4 GGUF as an official-format safetensors checkpoint (fixtures)",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<ExportArgs>();
      sub.add_option("MODEL", a->model, "DS4 GGUF")->required()->check(CLI::ExistingFile);
      sub.add_option("-o,--output", a->out, "output folder")->required();
      sub.add_option("--shards", a->shards, "number of safetensors shards")->check(CLI::Range(1, 1000));
      sub.add_flag("--mtp", a->mtp, "also write a random MTP/drafter block (mtp.0.*) for sidecar tests");
      return [a]() -> int {
        try {
          const auto s = ds4::convert::export_official(a->model, a->out, {.shards = a->shards, .mtp = a->mtp});
          fmt::print("{}: {} tensors in {} shards, {:.1f} MiB\n", a->out, s.tensors, s.shards, s.bytes / 1048576.0);
          return 0;
        } catch (const std::exception& e) {
          fmt::print(stderr, "ds4ctl export-official: {}\n", e.what());
          return 1;
        }
      };
    }};

}  // namespace
