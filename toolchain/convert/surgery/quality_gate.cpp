// The quality gate; see quality_gate.hpp.
#include "toolchain/convert/surgery/quality_gate.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/model/model.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "toolchain/convert/converter.hpp"

namespace ds4::convert::surgery {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Model> load(const std::string& path, const GateOptions& o, const std::string& role) {
  fs::path gguf = path;
  if (fs::is_directory(path)) {  // official format: convert first, by the gate's recipe
    const fs::path work = o.work_dir.empty() ? fs::temp_directory_path() / "ds4_gate" : fs::path(o.work_dir);
    fs::create_directories(work);
    gguf = work / (role + "-" + fs::path(path).filename().string() + "-" + o.recipe + ".gguf");
    ConvertOptions c;
    c.source_dir = path;
    c.output = gguf.string();
    c.recipe = o.recipe;
    c.threads = o.threads;
    convert_checkpoint(c);
  }
  return Model::load(gguf, {.threads = o.threads});
}

std::vector<std::vector<int32_t>> read_prompts(const std::string& path, const Model& m) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<std::vector<int32_t>> out;
  std::optional<tokenizer::Tokenizer> tok;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::json::value v;
    try {
      v = boost::json::parse(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(n) + ": not JSON: " + e.what());
    }
    const auto* o = v.if_object();
    std::vector<int32_t> ids;
    const auto* t = o ? o->if_contains("tokens") : nullptr;
    if (!t && o) t = o->if_contains("prompt_ids");  // the agent model's evaluation cases
    if (t && t->is_array()) {
      for (const auto& x : t->as_array()) ids.push_back(int32_t(x.to_number<int64_t>()));
    } else if (const auto* s = o ? o->if_contains("text") : nullptr; s && s->is_string()) {
      if (!tok) tok.emplace(tokenizer::Tokenizer::from_gguf(m.gguf()));
      tok->append_encoded(std::string_view(s->as_string()), ids);  // as is: specials (BOS too) are in the text
    } else {
      throw std::runtime_error(path + ":" + std::to_string(n) +
                               ": needs \"tokens\" / \"prompt_ids\" (array) or \"text\" (string)");
    }
    if (ids.size() < 2) throw std::runtime_error(path + ":" + std::to_string(n) + ": a prompt needs at least 2 tokens");
    out.push_back(std::move(ids));
  }
  if (out.empty()) throw std::runtime_error(path + ": no prompts");
  return out;
}

// log-softmax in double.
std::vector<double> log_probs(std::span<const float> logits) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (float x : logits) z += std::exp(double(x) - mx);
  const double lz = std::log(z) + mx;
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - lz;
  return out;
}

size_t argmax(std::span<const float> v) { return size_t(std::max_element(v.begin(), v.end()) - v.begin()); }

}  // namespace

std::string gate_verdict(double d, double pass_max, double debt_max) {
  return d <= pass_max ? "pass" : d <= debt_max ? "debt" : "fail";
}

GateReport run_gate(const GateOptions& o) {
  if (!(o.pass_max <= o.debt_max)) throw std::runtime_error("gate thresholds: pass must not exceed debt");
  const auto base = load(o.baseline, o, "baseline"), cand = load(o.candidate, o, "candidate");
  if (base->info().n_vocab != cand->info().n_vocab)
    throw std::runtime_error("baseline and candidate vocabularies differ (" + std::to_string(base->info().n_vocab) +
                             " vs " + std::to_string(cand->info().n_vocab) + " tokens)");
  const auto prompts = read_prompts(o.prompts, *base);
  GateReport r;
  double nll_b = 0, nll_c = 0, kl = 0;
  size_t top1 = 0, greedy_same = 0;
  for (const auto& p : prompts) {
    Context cb(base), cc(cand);
    const auto lb = cb.verify(p), lc = cc.verify(p);
    for (size_t i = 0; i + 1 < p.size(); ++i) {
      const auto pb = log_probs(lb[i]), pc = log_probs(lc[i]);
      nll_b -= pb.at(size_t(p[i + 1])), nll_c -= pc.at(size_t(p[i + 1]));
      double k = 0;
      for (size_t v = 0; v < pb.size(); ++v) k += std::exp(pb[v]) * (pb[v] - pc[v]);
      kl += std::max(0.0, k);
      top1 += argmax(lb[i]) == argmax(lc[i]);
      ++r.positions;
    }
    // Greedy: the baseline's continuation, fed to both; the candidate's choice at each step.
    std::vector<float> cur_b(lb.back()), cur_c(lc.back());
    for (size_t g = 0; g < o.greedy_tokens; ++g) {
      const int32_t t = int32_t(argmax(cur_b));
      greedy_same += size_t(argmax(cur_c)) == size_t(t);
      ++r.greedy_steps;
      if (g + 1 == o.greedy_tokens || cb.size() + 1 >= cb.capacity()) break;
      const auto nb = cb.decode(t);
      cur_b.assign(nb.begin(), nb.end());
      const auto nc = cc.decode(t);
      cur_c.assign(nc.begin(), nc.end());
    }
  }
  r.prompts = prompts.size();
  const double n = double(std::max<size_t>(r.positions, 1));
  r.ppl_baseline = std::exp(nll_b / n);
  r.ppl_candidate = std::exp(nll_c / n);
  r.ppl_delta = r.ppl_candidate / r.ppl_baseline - 1.0;
  r.mean_kl = kl / n;
  r.top1_agreement = double(top1) / n;
  r.greedy_agreement = r.greedy_steps ? double(greedy_same) / double(r.greedy_steps) : 1.0;
  r.verdict = gate_verdict(r.ppl_delta, o.pass_max, o.debt_max);
  return r;
}

}  // namespace ds4::convert::surgery
