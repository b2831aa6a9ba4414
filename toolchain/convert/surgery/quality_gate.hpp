#pragma once
// The quality gate (docs/surgery.md §quality-gate): one judge for every artifact. A baseline and
// a candidate model run through the engine on the same frozen prompts; the gate reports
// perplexity delta, KL, top-1 and greedy agreement over every teacher-forced position, and a
// verdict (pass / debt / fail) from the perplexity delta. Models are DS4 GGUFs or official-format
// folders (converted first with `recipe` into `work_dir`). Everything is deterministic: the same
// inputs give the same numbers (the engine's exact mode).
#include <cstddef>
#include <string>
#include <vector>

namespace ds4::convert::surgery {

struct GateOptions {
  std::string baseline, candidate, prompts;
  double pass_max = 0.05, debt_max = 0.10;
  size_t greedy_tokens = 16;
  unsigned threads = 2;
  std::string recipe = "mxfp4";  // for official-format folders
  std::string work_dir;          // where converted folders go (default: a temp folder)
};

struct GateReport {
  size_t prompts = 0, positions = 0, greedy_steps = 0;
  double ppl_baseline = 0, ppl_candidate = 0, ppl_delta = 0;  // delta relative: cand/base - 1
  double mean_kl = 0, top1_agreement = 0, greedy_agreement = 0;
  std::string verdict;  // "pass", "debt" or "fail"
};

// Throws std::runtime_error (or ConvertError for a conversion) naming the file on bad input.
GateReport run_gate(const GateOptions& options);

// The verdict class of a relative perplexity delta under the thresholds.
std::string gate_verdict(double ppl_delta, double pass_max, double debt_max);

}  // namespace ds4::convert::surgery
