// `ds4ctl hash-route-report SRC_DIR --text calib.txt --keep N [--plan-out PLAN.toml --repair
// naive|t1|t2] [--max-memory BYTES]`: per hash layer of an official-format checkpoint, the load
// per expert on the calibration text, the share of routing assignments a naive cut and a
// keep-by-load cut reassign, and T1's remap with its cosine similarities
// (docs/surgery.md §hash-layers). --plan-out writes the chosen repair as a surgery plan.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "ds4ctl/command_registry.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "toolchain/convert/official_config.hpp"
#include "toolchain/convert/safetensors.hpp"
#include "toolchain/convert/surgery/hash_route.hpp"

namespace {

struct HashArgs {
  std::string src, text, plan_out, repair = "t1", name;
  uint32_t keep = 0;
  uint64_t max_memory = uint64_t(2) << 30;
};

ds4ctl::Register reg{
    "hash-route-report", "Hash-layer load and reassignment of an expert cut; T1/T2 repair plans",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<HashArgs>();
      sub.add_option("SRC_DIR", a->src, "official-format checkpoint folder")->required()->check(CLI::ExistingDirectory);
      sub.add_option("--text", a->text, "calibration text")->required()->check(CLI::ExistingFile);
      sub.add_option("--keep", a->keep, "routed experts to keep per layer")->required()->check(CLI::PositiveNumber);
      sub.add_option("--plan-out", a->plan_out, "write a surgery plan with the chosen repair");
      sub.add_option("--repair", a->repair, "naive | t1 | t2 (default t1)");
      sub.add_option("--name", a->name, "the plan's model name (default <folder>-e<keep>-<repair>)");
      sub.add_option("--max-memory", a->max_memory, "bytes for sketches + Gram per layer (default 2 GiB)")
          ->transform(CLI::AsSizeValue(false));
      return [a]() -> int {
        try {
          using namespace ds4::convert;
          const OfficialConfig cfg = read_official_config(a->src);
          ds4::tokenizer::Vocabulary v{cfg.tokens, cfg.merges, cfg.bos_id, cfg.eos_id};
          const ds4::tokenizer::Tokenizer tok(std::move(v));
          std::ifstream in(a->text);
          std::stringstream ss;
          ss << in.rdbuf();
          const std::vector<int32_t> ids = tok.encode(ss.str());
          const Checkpoint ck = Checkpoint::open(a->src);
          const auto rs = surgery::hash_route_report(ck, ids, a->keep, {.max_memory = a->max_memory});
          fmt::print("calibration: {} tokens; keep {} of {} experts\n", ids.size(), a->keep, cfg.dims.n_expert);
          for (const auto& r : rs) {
            fmt::print(
                "hash layer {}: naive cut (keep 0..{}) reassigns {:.1f}% of {} assignments; keep-by-load {:.1f}%\n",
                r.layer, a->keep - 1, 100 * r.naive_reassigned, r.assignments, 100 * r.by_load_reassigned);
            fmt::print("  load:");
            for (size_t e = 0; e < r.load.size(); ++e) fmt::print(" {}:{}", e, r.load[e]);
            fmt::print("\n  T1 remap (cosine, {} sketch coordinates, {} bytes):", r.sketch_coordinates,
                       r.sketch_memory);
            for (size_t e = 0; e < r.t1_target.size(); ++e)
              if (r.t1_target[e] != e) fmt::print(" {}->{} ({:.3f})", e, r.t1_target[e], r.t1_cosine[e]);
            fmt::print("\n");
          }
          if (!a->plan_out.empty()) {
            const std::string name =
                a->name.empty()
                    ? fmt::format("{}-e{}-{}", std::filesystem::path(a->src).filename().string(), a->keep, a->repair)
                    : a->name;
            std::ofstream(a->plan_out) << surgery::repair_plan(rs, cfg.dims.n_layer, a->keep, a->repair, name);
            fmt::print("plan: {}\n", a->plan_out);
          }
          return 0;
        } catch (const std::exception& e) {
          fmt::print(stderr, "ds4ctl hash-route-report: {}\n", e.what());
          return 1;
        }
      };
    }};

}  // namespace
