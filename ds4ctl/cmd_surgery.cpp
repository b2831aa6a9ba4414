// `ds4ctl surgery SRC_DIR -o DST_DIR --plan PLAN.toml [--shard N]`: removes routed experts and
// layers from an official-format checkpoint by plan, copying every kept tensor's bytes unchanged,
// and checks the result as a serving loader would (docs/surgery.md). --shard N runs the plan on
// source shard N alone (the trial step before the whole model).
#include <fmt/core.h>

#include <memory>
#include <optional>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/surgery/surgery.hpp"

namespace {

struct SurgeryArgs {
  std::string src, out, plan;
  size_t shard = 0;
};

ds4ctl::Register reg{
    "surgery", "Remove routed experts / layers of an official-format checkpoint by plan (structure only)",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<SurgeryArgs>();
      sub.add_option("SRC_DIR", a->src, "official-format checkpoint folder")->required()->check(CLI::ExistingDirectory);
      sub.add_option("-o,--output", a->out, "output folder")->required();
      sub.add_option("--plan", a->plan, "PLAN.toml (docs/surgery.md §plan)")->required()->check(CLI::ExistingFile);
      sub.add_option("--shard", a->shard, "run on this source shard only (1-based) and check it")
          ->check(CLI::PositiveNumber);
      return [a]() -> int {
        try {
          using namespace ds4::convert::surgery;
          SurgeryOptions o{a->src, a->out, a->plan, a->shard ? std::optional<size_t>(a->shard) : std::nullopt};
          const SurgeryResult r = run_surgery(o);
          fmt::print("{}: '{}', {} layers, {} routed experts per layer\n", a->out, r.plan.name,
                     r.plan.layers.size() - r.plan.drop_layers.size(), *r.plan.n_expert);
          fmt::print("tensors: {} in, {} out ({} copied byte for byte, {} routing/merged edits, {} removed)\n",
                     r.tensors_in, r.tensors_out, r.copied.size(), r.tensors_edited, r.tensors_removed);
          fmt::print("bytes: {:.2f} MiB -> {:.2f} MiB in {} shard(s)\n", r.bytes_in / 1048576.0,
                     r.bytes_out / 1048576.0, r.shards.size());
          for (const MergeAudit& m : r.merges)
            fmt::print("merge layer {} expert {}{} <- {} experts: requantization rel. RMSE {:.4f}\n", m.layer,
                       m.survivor, m.part, m.members.size(), m.rel_rmse());
          fmt::print("load check: {} passed (contiguous shards, gates and tid2eid match the config)\n",
                     a->shard ? "partial (one shard)" : "full");
          return 0;
        } catch (const std::exception& e) {
          fmt::print(stderr, "ds4ctl surgery: {}\n", e.what());
          return 1;
        }
      };
    }};

}  // namespace
