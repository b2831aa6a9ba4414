// ds4ctl bench-spec: exact speculative decoding's speed, side by side in one run, through the
// serving layer's own decode step (TurnDecoder with a Drafter, as the engine worker and
// eval-agent take it). For each drafter and K, a fixed set of greedy prompts; the configurations
// interleaved round-robin over the repeats so machine noise hits all alike; every output checked
// byte-identical to K = 0's (exit 1 otherwise). What the columns mean:
// docs/speculation.md §benchmark.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "config/drafter_spec.hpp"
#include "ds4ctl/command_registry.hpp"
#include "ds4ctl/count_list.hpp"
#include "ds4ctl/default_model.hpp"
#include "engine/model/mtp.hpp"
#include "engine/sampler/sampler.hpp"
#include "gateway/serving/drafter.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/turn_decoder.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using ds4::serving::Token;

struct SpecBenchOptions {
  std::string model_path;
  unsigned threads = 0;
  std::vector<std::string> drafters{"ngram"};
  std::vector<uint32_t> ks{0, 1, 2, 3, 4, 6};
  std::vector<std::string> prompt_files;
  uint32_t tokens = 128;
  uint32_t repeats = 3;
};

// Agent-like turns: code to rewrite, a list to repeat and extend, a tool call, plain chat.
const char* const kBuiltinPrompts[] = {
    "Here is a function:\n```python\ndef total(items):\n    s = 0\n    for item in items:\n"
    "        s += item.price * item.quantity\n    return s\n```\nRename it to order_total, add a docstring "
    "and type hints, and reply with the whole function.",
    "Repeat this shopping list exactly, one item per line, then add three more items:\napples\nbread\nmilk\n"
    "eggs\nbutter\ncheese\nrice\nbeans\ntomatoes\nonions",
    "Call the search tool with the JSON arguments {\"query\": \"weather in Paris\", \"limit\": 5}, then the "
    "same call again with {\"query\": \"weather in Lyon\", \"limit\": 5}.",
    "What is a good way to learn to cook at home? Answer in a few sentences.",
};

// One user turn as the chat endpoint renders it without tools (non-thinking).
std::string chat_turn(const std::string& text) {
  return "<｜begin▁of▁sentence｜><｜User｜>" + text + "<｜Assistant｜></think>";
}

// oracle:RATE: proposes K = 0's own output, each draft right with probability RATE (a fixed hash
// of its place, so every repeat drafts alike) and wrong after that, at no drafting cost. It
// measures what the verify path gives at a chosen acceptance, whatever drafter reaches it: the
// ceiling of any drafter on this model and machine.
class OracleDrafter final : public ds4::serving::Drafter {
 public:
  OracleDrafter(double rate, size_t vocab) : rate_(rate), vocab_(vocab) {}
  void expect(const std::vector<std::vector<Token>>* prompts, const std::vector<std::vector<Token>>* outputs) {
    prompts_ = prompts;
    outputs_ = outputs;
  }
  std::vector<Token> draft(ds4::serving::EngineSequence&, std::span<const Token> history, size_t k) override {
    if (!prompts_ || !outputs_) return {};
    for (size_t p = 0; p < prompts_->size(); ++p) {
      const std::vector<Token>& prompt = (*prompts_)[p];
      const std::vector<Token>& out = (*outputs_)[p];
      if (history.size() <= prompt.size() || !std::equal(prompt.begin(), prompt.end(), history.begin())) continue;
      const size_t at = history.size() - prompt.size();  // the output's tokens so far, the last one included
      if (at > out.size() || !std::equal(out.begin(), out.begin() + at, history.begin() + prompt.size())) continue;
      std::vector<Token> d;
      for (size_t i = at; i < out.size() && d.size() < k; ++i) {
        const uint64_t h = (uint64_t(p) << 32 | i) * 0x9E3779B97F4A7C15ull;
        if (double(h >> 11) / double(1ull << 53) >= rate_) {
          d.push_back(Token((out[i] + 1) % Token(vocab_)));  // wrong: the rest would go anyway
          break;
        }
        d.push_back(out[i]);
      }
      return d;
    }
    return {};
  }

 private:
  double rate_;
  size_t vocab_;
  const std::vector<std::vector<Token>>* prompts_ = nullptr;
  const std::vector<std::vector<Token>>* outputs_ = nullptr;
};

// A drafter under test and the sequence it decodes on (an MTP drafter's state lives with the
// sequence: the backend attaches the drafter model to the sequences it makes afterwards).
struct Lane {
  std::string name;  // "none" for K = 0; an MTP drafter by its file name
  std::unique_ptr<ds4::serving::Drafter> drafter;
  std::unique_ptr<ds4::serving::EngineSequence> seq;
  OracleDrafter* oracle = nullptr;  // when the drafter is one
};

Lane make_lane(const std::string& spec, ds4::serving::Ds4Backend& backend, const std::string& model_path) {
  Lane l;
  l.name = spec;
  if (spec == "none") {
    l.seq = backend.new_sequence();
    return l;
  }
  if (spec.rfind("oracle", 0) == 0) {
    const double rate = spec.size() > 7 ? std::stod(spec.substr(7)) : 1.0;
    auto o = std::make_unique<OracleDrafter>(rate, backend.vocab_size());
    l.oracle = o.get();
    l.drafter = std::move(o);
    l.seq = backend.new_sequence();
    return l;
  }
  const ds4::config::DrafterSpec d = ds4::config::parse_drafter(spec);
  if (d.kind == ds4::config::DrafterKind::Ngram) l.drafter = ds4::serving::make_ngram_drafter();
  if (d.kind == ds4::config::DrafterKind::Mtp) {
    // Only this lane's sequence gets the block (and keeps the final states it reads).
    backend.set_drafter_model(ds4::MtpModel::load(d.path, backend.model(), model_path));
    l.drafter = ds4::serving::make_mtp_drafter();
    l.name = "mtp:" + std::filesystem::path(d.path).filename().string();
  }
  l.seq = backend.new_sequence();
  backend.set_drafter_model(nullptr);
  return l;
}

struct Run {
  std::vector<std::vector<Token>> outputs;  // per prompt
  size_t tokens = 0, drafted = 0, accepted = 0;
  double decode_seconds = 0;  // after each prompt's prefill
};

// Decodes every prompt greedily on the lane's sequence, as the worker does a turn.
Run run_prompts(Lane& lane, size_t k, const std::vector<std::vector<Token>>& prompts, uint32_t tokens,
                const ds4::serving::EngineBackend& backend) {
  ds4::sampler::SamplerConfig greedy;  // ties go to the lowest id
  greedy.temperature = 0;
  Run run;
  for (const std::vector<Token>& prompt : prompts) {
    ds4::serving::EngineSequence& seq = *lane.seq;
    seq.clear();
    seq.append(prompt);
    ds4::sampler::Sampler sampler(greedy);
    const auto t0 = Clock::now();
    ds4::serving::TurnDecoder decoder(
        seq, backend, nullptr, [&](std::span<const float> l) { return sampler.sample(l); },
        k > 0 ? lane.drafter.get() : nullptr, k, prompt);
    std::vector<Token> out;
    for (uint32_t n = 0; n < tokens; ++n) {
      const ds4::serving::DecodedToken d = decoder.next();
      if (d.ends) break;
      out.push_back(d.token);
      if (n + 1 == tokens) break;
      decoder.feed(d.token, tokens - n - 1);
    }
    decoder.finish();
    run.decode_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    run.tokens += out.size();
    run.drafted += decoder.speculation().drafted;
    run.accepted += decoder.speculation().accepted;
    run.outputs.push_back(std::move(out));
  }
  return run;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run_bench_spec(const SpecBenchOptions& o) {
  ds4::LoadOptions load;
  load.threads = o.threads;
  std::vector<std::string> texts;
  for (const std::string& f : o.prompt_files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error("--prompt " + f + ": cannot read the file");
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
  }
  if (texts.empty()) texts.assign(std::begin(kBuiltinPrompts), std::end(kBuiltinPrompts));

  // The context holds the longest prompt (no more tokens than bytes), the completion and the
  // drafts beyond it.
  size_t longest = 0;
  for (const std::string& t : texts) longest = std::max(longest, chat_turn(t).size());
  ds4::ContextOptions ctx;
  ctx.context_length = static_cast<uint32_t>(longest + o.tokens + 64);
  auto backend = ds4::serving::Ds4Backend::load(o.model_path, load, ctx);
  std::vector<std::vector<Token>> prompts;
  for (const std::string& t : texts) prompts.push_back(backend->encode(chat_turn(t)));

  // K = 0 decodes on a sequence of its own, with no drafter attached: plain serving.
  std::vector<Lane> lanes;
  lanes.push_back(make_lane("none", *backend, o.model_path));
  for (const std::string& d : o.drafters) lanes.push_back(make_lane(d, *backend, o.model_path));
  struct Config {
    Lane* lane;
    size_t k;
    std::vector<Run> runs;
  };
  std::vector<Config> configs;
  configs.push_back({&lanes[0], 0, {}});
  for (size_t i = 1; i < lanes.size(); ++i)
    for (uint32_t k : o.ks)
      if (k > 0) configs.push_back({&lanes[i], k, {}});

  bool same = true;
  for (uint32_t r = 0; r < o.repeats; ++r)
    for (Config& c : configs) {
      if (c.lane->oracle) c.lane->oracle->expect(&prompts, &configs[0].runs.front().outputs);
      c.runs.push_back(run_prompts(*c.lane, c.k, prompts, o.tokens, *backend));
      const Run& ref = configs[0].runs.front();
      for (size_t p = 0; p < prompts.size(); ++p)
        if (c.runs.back().outputs[p] != ref.outputs[p]) {
          same = false;
          fmt::print(stderr, "drafter {} K {} repeat {}: prompt {}'s output differs from K = 0's\n", c.lane->name, c.k,
                     r + 1, p + 1);
        }
    }

  fmt::print(
      "model {}, {} prompts, {} tokens each, greedy, {} repeats interleaved; tok/s = completion tokens over "
      "decode time (prefill excluded), median\n",
      std::filesystem::path(o.model_path).filename().string(), prompts.size(), o.tokens, o.repeats);
  size_t w = 8;
  for (const Lane& l : lanes) w = std::max(w, l.name.size());
  fmt::print("{:<{}} {:>2} {:>7} {:>8} {:>9} {:>11} {:>9} {:>7}\n", "drafter", w, "K", "tokens", "drafted", "accepted",
             "acceptance", "tok/s", "vs K=0");
  double base = 0;
  for (const Config& c : configs) {
    std::vector<double> rates;
    for (const Run& run : c.runs) rates.push_back(run.decode_seconds > 0 ? run.tokens / run.decode_seconds : 0);
    const double tps = median(rates);
    if (c.k == 0) base = tps;
    const Run& first = c.runs.front();
    const std::string acc = first.drafted ? fmt::format("{:.2f}", double(first.accepted) / first.drafted) : "-";
    fmt::print("{:<{}} {:>2} {:>7} {:>8} {:>9} {:>11} {:>9.1f} {:>6.2f}x\n", c.lane->name, w, c.k, first.tokens,
               first.drafted, first.accepted, acc, tps, base > 0 ? tps / base : 0.0);
  }
  fmt::print("every output identical to K = 0's: {}\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}

ds4ctl::Register reg{
    "bench-spec", "Measure exact speculative decoding per drafter and K against K = 0, side by side",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto o = std::make_shared<SpecBenchOptions>();
      o->model_path = ds4ctl::default_model_path();
      sub.add_option("-m,--model", o->model_path, "GGUF model file (default: the embedded model)")
          ->check(CLI::ExistingFile)
          ->capture_default_str();
      sub.add_option("-t,--threads", o->threads, "Worker threads; 0 uses every core")->capture_default_str();
      sub.add_option_function<std::string>(
          "--drafters",
          [o](const std::string& s) {
            o->drafters.clear();
            std::string item;
            std::stringstream ss(s);
            while (std::getline(ss, item, ',')) {
              if (item.rfind("oracle", 0) == 0) {
                double rate = 1;
                try {
                  if (item.size() > 6 && item[6] == ':') rate = std::stod(item.substr(7));
                  else if (item.size() > 6) rate = -1;
                } catch (const std::exception&) {
                  rate = -1;
                }
                if (!(rate >= 0 && rate <= 1))
                  throw CLI::ValidationError("--drafters",
                                             "'" + item + "': oracle takes a rate in [0, 1] (oracle:0.7)");
                o->drafters.push_back(item);
                continue;
              }
              if (item != "ngram" && item.rfind("mtp:", 0) != 0)
                throw CLI::ValidationError("--drafters",
                                           "unknown drafter '" + item + "' (known: ngram, mtp:FILE, oracle[:RATE])");
              if (item.size() == 4) throw CLI::ValidationError("--drafters", "mtp: names no file (mtp:FILE)");
              o->drafters.push_back(item);
            }
            if (o->drafters.empty()) throw CLI::ValidationError("--drafters", "names no drafter");
          },
          "Comma-separated drafters: ngram, mtp:FILE, oracle[:RATE] (K = 0's output, each draft right with "
          "probability RATE, at no cost: the verify path's ceiling) (default ngram)");
      sub.add_option_function<std::string>(
          "--k", [o](const std::string& s) { o->ks = ds4ctl::parse_count_list("--k", s, 0, 16, "a depth (0..16)"); },
          "Comma-separated draft depths (default 0,1,2,3,4,6; 0 is always measured)");
      sub.add_option("--prompt", o->prompt_files,
                     "A file whose text is one user turn (repeatable); replaces the built-in prompts")
          ->check(CLI::ExistingFile);
      sub.add_option("--tokens", o->tokens, "Completion tokens per prompt")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      sub.add_option("--repeats", o->repeats, "Repeats, interleaved (medians)")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      return [o] {
        std::sort(o->ks.begin(), o->ks.end());
        o->ks.erase(std::unique(o->ks.begin(), o->ks.end()), o->ks.end());
        return run_bench_spec(*o);
      };
    }};

}  // namespace
