// `ds4ctl eval-agent -m MODEL.gguf --cases CASES.jsonl [--limit N] [--min-call R] [--min-answer R]
//  [--min-plain R] [--max-new N] [--show] [--free]`: measures a model's agent behaviour by this engine (greedy,
// under the server's token rules for tool requests unless --free): right
// DSML tool calls, answers that use tool results, no tool call on plain chat, separately for
// tool schemas seen in training and held-out ones (ds4ctl/eval_agent/agent_eval.hpp). With
// --min-* it exits 1 when a rate (seen and held-out each) is below the bound, so a test can hold
// a model to its quality.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "config/drafter_spec.hpp"
#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/default_model.hpp"
#include "ds4ctl/eval_agent/agent_eval.hpp"
#include "engine/cuda/backend_choice.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/model/model.hpp"
#include "engine/model/mtp.hpp"
#include "gateway/serving/ds4_backend.hpp"

namespace {

struct EvalArgs {
  std::string model, cases, json_out;
  size_t limit = 0, max_new = 160;
  double min_call = 0, min_answer = 0, min_plain = 0, min_dsml = 0;
  bool show = false, exact = false, free = false;
  unsigned threads = 0;
  std::string backend = "auto";  // engine/cuda/backend_choice.hpp
  std::string drafter;           // none, ngram or mtp:FILE (config/drafter_spec.hpp)
  size_t k = 4;
};

int run_eval(const EvalArgs& a) {
  using namespace ds4::agent_eval;
  ds4::LoadOptions lo;
  lo.threads = a.threads;
  lo.arithmetic = a.exact ? ds4::Arithmetic::Exact : ds4::Arithmetic::Fast;
  ds4::LoadedModel loaded = ds4::load_model_on(ds4::cuda::parse_backend(a.backend), a.model, lo,
                                               [](const std::string& l) { fmt::print(stderr, "{}\n", l); });
  const std::string id =
      loaded.model->info().name.empty() ? std::filesystem::path(a.model).stem().string() : std::string();
  const auto backend =
      std::make_shared<ds4::serving::Ds4Backend>(std::move(loaded.model), std::move(loaded.tokenizer), id);
  // With a drafter the replies are the same; what changes is how many forwards they take.
  const ds4::config::DrafterSpec spec = ds4::config::parse_drafter(a.drafter);
  std::unique_ptr<ds4::serving::Drafter> drafter;
  if (spec.kind == ds4::config::DrafterKind::Ngram) drafter = ds4::serving::make_ngram_drafter();
  if (spec.kind == ds4::config::DrafterKind::Mtp) {
    backend->set_drafter_model(ds4::MtpModel::load(spec.path, backend->model(), a.model));
    drafter = ds4::serving::make_mtp_drafter();
  }
  std::vector<Case> cases = load_cases(a.cases);
  if (a.limit && cases.size() > a.limit) cases.resize(a.limit);
  const Report r =
      evaluate(backend, cases, a.max_new, a.free ? Decoding::Free : Decoding::Served, {drafter.get(), a.k});
  if (a.show)
    for (size_t i = 0; i < r.results.size(); ++i)
      fmt::print("case {} {}{} {}: {}\n  output: {}\n", i, cases[i].kind, cases[i].heldout ? " (held-out)" : "",
                 r.results[i].pass ? "PASS" : "FAIL", r.results[i].detail, r.results[i].output);
  bool ok = true;
  auto line = [&](const char* what, const Score* s, double min) {
    for (int h = 0; h < 2; ++h) {
      if (!s[h].n) continue;
      fmt::print("{:<7} {:<9} {:3}/{:<3} = {:5.1f}%\n", what, h ? "held-out" : "seen", s[h].pass, s[h].n,
                 100 * s[h].rate());
      if (s[h].rate() < min) ok = false;
    }
  };
  fmt::print("{} cases, {} generated tokens, {} decodes weighing names, {} prompts tokenized differently by Python\n",
             cases.size(), r.generated_tokens, r.weighing_decodes, r.ids_mismatch);
  if (drafter)
    fmt::print("speculation {} k {}: {} drafted, {} accepted, acceptance {:.3f}\n", ds4::config::drafter_name(spec),
               a.k, r.speculation.drafted, r.speculation.accepted,
               r.speculation.drafted ? double(r.speculation.accepted) / double(r.speculation.drafted) : 0.0);
  line("dsml", r.well_formed, a.min_dsml);
  line("call", r.call, a.min_call);
  line("answer", r.answer, a.min_answer);
  line("plain", r.plain, a.min_plain);
  if (r.ids_mismatch) ok = false;
  if (!a.json_out.empty()) {
    std::ofstream out(a.json_out);
    auto js = [&](const Score* s) {
      return fmt::format("{{\"seen\": [{}, {}], \"heldout\": [{}, {}]}}", s[0].pass, s[0].n, s[1].pass, s[1].n);
    };
    out << fmt::format(
        "{{\"cases\": {}, \"dsml\": {}, \"call\": {}, \"answer\": {}, \"plain\": {}, \"ids_mismatch\": {}, "
        "\"generated_tokens\": {}, \"weighing_decodes\": {}, \"drafted\": {}, \"accepted\": {}}}\n",
        cases.size(), js(r.well_formed), js(r.call), js(r.answer), js(r.plain), r.ids_mismatch, r.generated_tokens,
        r.weighing_decodes, r.speculation.drafted, r.speculation.accepted);
  }
  return ok ? 0 : 1;
}

ds4ctl::Register reg{
    "eval-agent", "Score a model's tool calls, tool-result answers and plain chat (greedy)",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<EvalArgs>();
      a->model = ds4ctl::default_model_path();
      sub.add_option("-m,--model", a->model, "GGUF model (default: the embedded agent model)")
          ->capture_default_str()
          ->check(CLI::ExistingFile);
      sub.add_option("--cases", a->cases, "cases (JSON lines from tools/tinyagent)")
          ->required()
          ->check(CLI::ExistingFile);
      sub.add_option("--limit", a->limit, "evaluate only the first N cases");
      sub.add_option("--max-new", a->max_new, "generated tokens per case at most")->capture_default_str();
      sub.add_option("--min-call", a->min_call, "fail below this tool-call rate (0..1)");
      sub.add_option("--min-answer", a->min_answer, "fail below this answer rate (0..1)");
      sub.add_option("--min-dsml", a->min_dsml, "fail below this well-formed DSML rate where a call is needed (0..1)");
      sub.add_option("--min-plain", a->min_plain, "fail below this no-tool rate on plain chat (0..1)");
      sub.add_option("--json", a->json_out, "also write the scores ([pass, n] per group) as JSON");
      sub.add_flag("--show", a->show, "print every case's output and verdict");
      sub.add_flag("--exact", a->exact, "exact arithmetic");
      sub.add_flag("--free", a->free,
                   "plain greedy decoding, the model alone (default: the server's token rules for tool requests: "
                   "DSML structure, declared tool and parameter names, no end inside a call)");
      sub.add_option("-t,--threads", a->threads, "worker threads; 0 uses every core");
      sub.add_option("--backend", a->backend, "auto, cpu or cuda (auto: the GPU when one is usable)")
          ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
          ->capture_default_str();
      sub.add_option("--speculation-drafter", a->drafter,
                     "verify drafts while decoding (none, ngram, mtp:FILE); replies unchanged, acceptance reported");
      sub.add_option("--speculation-k", a->k, "drafts per verify")->capture_default_str();
      return [a] { return run_eval(*a); };
    }};

}  // namespace
