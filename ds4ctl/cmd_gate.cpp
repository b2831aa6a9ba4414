// `ds4ctl gate --baseline A --candidate B --prompts FROZEN.jsonl`: the quality gate
// (docs/surgery.md §quality-gate). A and B are DS4 GGUFs or official-format folders (converted
// first). Prints perplexity of each and the delta, mean KL, top-1 and greedy agreement and the
// verdict; the exit status is 0 for pass and debt, 2 for fail, 1 for an error.
#include <fmt/core.h>

#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/surgery/quality_gate.hpp"

namespace {

ds4ctl::Register reg{
    "gate", "Quality gate: perplexity delta, KL and agreement of a candidate model against a baseline",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<ds4::convert::surgery::GateOptions>();
      sub.add_option("--baseline", a->baseline, "baseline model (GGUF or official-format folder)")->required();
      sub.add_option("--candidate", a->candidate, "candidate model (GGUF or official-format folder)")->required();
      sub.add_option("--prompts", a->prompts, "frozen prompts, JSON lines {\"tokens\": [...]} or {\"text\": ...}")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("--pass", a->pass_max, "largest perplexity delta that passes (default 0.05)");
      sub.add_option("--debt", a->debt_max, "largest delta that passes with a distillation debt (default 0.10)");
      sub.add_option("--greedy", a->greedy_tokens, "greedy continuation length per prompt (default 16)");
      sub.add_option("--recipe", a->recipe, "recipe for converting official-format folders (default mxfp4)");
      sub.add_option("--work", a->work_dir, "folder for converted models");
      sub.add_option("--threads", a->threads, "engine threads")->check(CLI::PositiveNumber);
      return [a]() -> int {
        try {
          const auto r = ds4::convert::surgery::run_gate(*a);
          fmt::print("prompts {}, positions {}, greedy steps {}\n", r.prompts, r.positions, r.greedy_steps);
          fmt::print("perplexity baseline {:.4f}  candidate {:.4f}  delta {:+.2f}%\n", r.ppl_baseline, r.ppl_candidate,
                     100 * r.ppl_delta);
          fmt::print("mean KL(base||cand) {:.5f} nats, top-1 agreement {:.2f}%, greedy agreement {:.2f}%\n", r.mean_kl,
                     100 * r.top1_agreement, 100 * r.greedy_agreement);
          fmt::print("verdict: {} (pass <= {:.0f}%, debt <= {:.0f}%)\n", r.verdict, 100 * a->pass_max,
                     100 * a->debt_max);
          return r.verdict == "fail" ? 2 : 0;
        } catch (const std::exception& e) {
          fmt::print(stderr, "ds4ctl gate: {}\n", e.what());
          return 1;
        }
      };
    }};

}  // namespace
