// Exact speculative decoding on the real engine (docs/speculation.md §why-the-output-is-exact): for every
// depth K = 0..6 the served tokens are the ones plain decoding serves, on the embedded agent
// model and the forged tiny model, with the ngram and MTP drafters, with a drafter that is always right
// (100 % acceptance) and one that is always wrong (0 %), with sampling at a fixed seed, and
// with a token policy acting on drafted positions. Each depth logs the SHA-256 of its outputs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <optional>

#include "engine/model/mtp.hpp"
#include "engine/sampler/sampler.hpp"
#include "gateway/serving/drafter.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/support/sha256.hpp"

namespace ds4::test {
namespace {

namespace fs = std::filesystem;
using serving::Token;

std::string model_path(const char* env, const char* fallback) {
  if (const char* p = std::getenv(env)) return p;
  return fallback;
}

struct Sink : serving::GenerationSink {
  std::string text;
  std::promise<serving::GenerationResult> done;
  bool on_text(std::string_view bytes) override {
    text += bytes;
    return true;
  }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

struct Output {
  std::vector<Token> tokens;
  std::string text;
  serving::FinishReason finish = serving::FinishReason::Error;
  size_t drafted = 0, accepted = 0;
  bool operator==(const Output& o) const { return tokens == o.tokens && text == o.text && finish == o.finish; }
};

// Proposes the continuation of a known output: the target's own tokens (kind right) or each of
// them plus one (kind wrong), while the history is still on that output.
class OracleDrafter final : public serving::Drafter {
 public:
  enum class Kind { Right, Wrong };
  OracleDrafter(Kind kind, size_t vocab) : kind_(kind), vocab_(vocab) {}
  void expect(std::vector<Token> prompt, const std::vector<Token>& completion) {
    ref_ = std::move(prompt);
    ref_.insert(ref_.end(), completion.begin(), completion.end());
  }
  std::vector<Token> draft(serving::EngineSequence&, std::span<const Token> history, size_t k) override {
    if (history.size() > ref_.size() || !std::equal(history.begin(), history.end(), ref_.begin())) return {};
    std::vector<Token> out;
    for (size_t i = history.size(); i < ref_.size() && out.size() < k; ++i)
      out.push_back(kind_ == Kind::Right ? ref_[i] : static_cast<Token>((ref_[i] + 1) % vocab_));
    return out;
  }

 private:
  Kind kind_;
  size_t vocab_;
  std::vector<Token> ref_;
};

// A token policy touching every hook the serving loop has: it forces the runner-up token every
// fourth step, weighs two alternatives at step 5 and takes the likelier one's first token, and
// forbids ending before step 10. Its decisions depend on the logits, so drafted positions must
// see exactly the logits decoding would.
class TestPolicy final : public serving::TokenPolicy {
 public:
  explicit TestPolicy(const serving::EngineBackend& b) : backend_(b) {}
  std::optional<Token> choose(std::span<const float> logits) override {
    if (step_ == 5 && preferred_) return backend_.encode_plain(kAlternatives[*preferred_])[0];
    if (step_ % 4 != 1) return std::nullopt;
    std::vector<float> l(logits.begin(), logits.end());
    l[static_cast<size_t>(sampler::argmax(l))] = -INFINITY;
    return sampler::argmax(l);
  }
  void accepted(Token, std::string_view) override { ++step_; }
  bool may_end() const override { return step_ >= 10; }
  std::vector<std::string> alternatives() const override {
    if (step_ != 5) return {};
    return {kAlternatives[0], kAlternatives[1]};
  }
  void prefer(size_t i) override { preferred_ = i; }

 private:
  static constexpr const char* kAlternatives[2] = {" the river", " a mountain pass"};
  const serving::EngineBackend& backend_;
  size_t step_ = 0;
  std::optional<size_t> preferred_;
};

struct Case {
  std::vector<Token> prompt;
  std::vector<std::string> stop;
  size_t max_tokens = 0;
};

class SpeculationExactness : public ::testing::TestWithParam<const char*> {
 protected:
  static inline std::map<std::string, std::shared_ptr<serving::Ds4Backend>> backends_;

  void SetUp() override {
    path_ = std::string(GetParam()) == "agent" ? model_path("DS4D_AGENT_MODEL", DS4D_AGENT_MODEL)
                                               : model_path("DS4D_TINY_MODEL", DS4D_FORGED_TINY_MODEL);
    ASSERT_TRUE(fs::exists(path_)) << path_;
    backend_ = backend_with("");
  }

  // The model (loaded once per suite), its sequences drafting with `sidecar` if one is named.
  std::shared_ptr<serving::Ds4Backend> backend_with(const std::string& sidecar) {
    auto& b = backends_[path_ + "+" + sidecar];
    if (!b) {
      LoadOptions load;
      load.threads = 2;
      ContextOptions ctx;
      ctx.context_length = 1024;
      b = serving::Ds4Backend::load(path_, load, ctx);
      if (!sidecar.empty()) b->set_drafter_model(MtpModel::load(sidecar, b->model(), path_));
    }
    return b;
  }
  static void TearDownTestSuite() { backends_.clear(); }

  std::unique_ptr<serving::Service> service(std::shared_ptr<serving::Drafter> drafter, size_t k,
                                            std::shared_ptr<serving::Ds4Backend> backend = {}) {
    serving::ServiceConfig c;
    c.drafter = std::move(drafter);
    c.speculation_k = k;
    auto s = std::make_unique<serving::Service>(c, metrics_);
    s->set_backend(backend ? backend : backend_);
    return s;
  }

  // The model again, its sequences drafting with its MTP sidecar (the committed one of the agent
  // model, the forged one of the forged model).
  std::shared_ptr<serving::Ds4Backend> mtp_backend() {
    const std::string sidecar = std::string(GetParam()) == "agent" ? model_path("DS4D_AGENT_MTP", DS4D_AGENT_MTP)
                                                                   : model_path("DS4D_TINY_MTP", DS4D_FORGED_TINY_MTP);
    return backend_with(sidecar);
  }

  // 56 prompts: chat turns and raw text, many repeating material (what prompt lookup finds),
  // some with stop strings and short max_tokens. The forged model (full DS4 layout, several
  // times slower per token) takes every fourth in the other tests, to keep the suite's time
  // small; the greedy test runs all 56 on both models.
  std::vector<Case> cases() const {
    std::vector<Case> all = all_cases();
    if (std::string(GetParam()) == "agent") return all;
    std::vector<Case> some;
    for (size_t i = 0; i < all.size(); i += 4) some.push_back(all[i]);
    return some;
  }
  std::vector<Case> all_cases() const {
    const std::vector<std::string> topics = {"rivers",       "a sorting function", "the tool list", "prime numbers",
                                             "a shell loop", "the weather",        "JSON objects",  "a short poem"};
    const std::vector<std::string> forms = {
        "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Tell me about {}.<｜Assistant｜></think>",
        "<｜begin▁of▁sentence｜><｜User｜>Repeat after me: {} and {} and {}.<｜Assistant｜></think>",
        "<｜begin▁of▁sentence｜><｜User｜>def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 2\n\n# now {}"
        "<｜Assistant｜></think>",
        "{} {} {} {} {}",
        "<｜begin▁of▁sentence｜><｜User｜>List: 1, 2, 3, 4, 5, 6, 7, 8 ({})<｜Assistant｜><think>",
        "<｜begin▁of▁sentence｜>Be brief.<｜User｜>What is {}?<｜Assistant｜></think>",
        "the {} of the {} of the {}"};
    std::vector<Case> out;
    for (size_t f = 0; f < forms.size(); ++f)
      for (size_t t = 0; t < topics.size(); ++t) {
        Case c;
        const std::string& x = topics[t];
        c.prompt = backend_->encode(fmt::format(fmt::runtime(forms[f]), x, x, x, x, x));
        c.max_tokens = (f + t) % 3 == 0 ? 7 : 24;
        if (t % 4 == 3) c.stop = {"\n", " the"};
        out.push_back(std::move(c));
      }
    return out;
  }

  Output run(serving::Service& s, const Case& c, sampler::SamplerConfig sampling = greedy(),
             std::shared_ptr<serving::TokenPolicy> policy = {}, bool speculation = true) {
    auto sink = std::make_shared<Sink>();
    serving::GenerationJob job;
    job.prompt = c.prompt;
    job.sampling = sampling;
    job.max_tokens = c.max_tokens;
    job.stop = c.stop;
    job.sink = sink;
    job.policy = std::move(policy);
    job.speculation = speculation;
    auto fut = sink->done.get_future();
    EXPECT_FALSE(s.submit(std::move(job)).has_value());
    const serving::GenerationResult r = fut.get();
    EXPECT_NE(r.finish, serving::FinishReason::Error) << r.error;
    return {r.completion, sink->text, r.finish, r.usage.drafted_tokens, r.usage.accepted_tokens};
  }

  static sampler::SamplerConfig greedy() {
    sampler::SamplerConfig g;
    g.temperature = 0;
    return g;
  }

  void greedy_at_every_depth(const std::string& drafter);

  std::string path_;
  std::shared_ptr<serving::Ds4Backend> backend_;
  serving::Metrics metrics_;
};

std::string digest(const std::vector<Output>& outs) {
  std::string all;
  for (const Output& o : outs) all += o.text + '\0' + serving::finish_reason_name(o.finish) + '\0';
  return testing::sha256_hex(all);
}

TEST_P(SpeculationExactness, GreedyOutputIsByteIdenticalForEveryDepth) {
  for (const std::string drafter : {"ngram", "mtp"}) greedy_at_every_depth(drafter);
}

void SpeculationExactness::greedy_at_every_depth(const std::string& drafter) {
  const std::vector<Case> cs = all_cases();
  std::vector<Output> base;
  for (size_t k = 0; k <= 6; ++k) {
    auto s = drafter == "mtp"
                 ? service(std::shared_ptr<serving::Drafter>(serving::make_mtp_drafter()), k, mtp_backend())
                 : service(std::shared_ptr<serving::Drafter>(serving::make_ngram_drafter()), k);
    std::vector<Output> outs;
    size_t drafted = 0, accepted = 0, tokens = 0;
    for (const Case& c : cs) {
      outs.push_back(run(*s, c));
      drafted += outs.back().drafted;
      accepted += outs.back().accepted;
      tokens += outs.back().tokens.size();
    }
    std::cout << fmt::format(
        "speculation model={} drafter={} K={} prompts={} tokens={} drafted={} accepted={} "
        "sha256={}\n",
        GetParam(), drafter, k, cs.size(), tokens, drafted, accepted, digest(outs));
    if (k == 0) {
      EXPECT_EQ(drafted, 0u);
      base = outs;
      continue;
    }
    EXPECT_GT(drafted, 0u) << "K=" << k << ": the " << drafter << " drafter never drafted, nothing was tested";
    for (size_t i = 0; i < cs.size(); ++i) EXPECT_TRUE(outs[i] == base[i]) << drafter << " K=" << k << " prompt " << i;
  }
}

TEST_P(SpeculationExactness, FullAndZeroAcceptanceChangeNothing) {
  const std::vector<Case> all = cases();
  const std::vector<Case> cs(all.begin(), all.begin() + std::min<size_t>(all.size(), 12));
  auto plain = service(nullptr, 0);
  std::vector<Output> base;
  for (const Case& c : cs) base.push_back(run(*plain, c));
  plain->stop(std::chrono::milliseconds(0));
  for (auto kind : {OracleDrafter::Kind::Right, OracleDrafter::Kind::Wrong})
    for (size_t k : {1, 3, 6}) {
      auto oracle = std::make_shared<OracleDrafter>(kind, backend_->vocab_size());
      auto s = service(oracle, k);
      std::vector<Output> outs;
      size_t drafted = 0, accepted = 0;
      for (size_t i = 0; i < cs.size(); ++i) {
        oracle->expect(cs[i].prompt, base[i].tokens);
        outs.push_back(run(*s, cs[i]));
        drafted += outs.back().drafted;
        accepted += outs.back().accepted;
        EXPECT_TRUE(outs.back() == base[i]) << "K=" << k << " prompt " << i;
      }
      const char* name = kind == OracleDrafter::Kind::Right ? "right" : "wrong";
      std::cout << fmt::format("speculation model={} drafter={} K={} drafted={} accepted={} sha256={}\n", GetParam(),
                               name, k, drafted, accepted, digest(outs));
      EXPECT_GT(drafted, 0u);
      if (kind == OracleDrafter::Kind::Wrong) {
        EXPECT_EQ(accepted, 0u);
      }
      // Always right: the drafts never reach past the known output, so every one is accepted.
      else
        EXPECT_EQ(accepted, drafted);
    }
}

// Sampling: the choice at each position is the sampler's on logits bit-identical to decode's,
// drawing from its random stream once per chosen token as decode does, so a seed gives the same
// output at any depth (docs/speculation.md §sampling).
TEST_P(SpeculationExactness, SampledOutputIsTheSameForASeedAtEveryDepth) {
  const std::vector<Case> all = cases();
  sampler::SamplerConfig sampling;
  sampling.temperature = 0.9f;
  sampling.min_p = 0;
  auto plain = service(nullptr, 0);
  std::vector<Output> base;
  for (size_t i = 0; i < all.size(); i += 2) {
    sampling.seed = 1000 + i;
    base.push_back(run(*plain, all[i], sampling));
  }
  plain->stop(std::chrono::milliseconds(0));
  auto oracle = std::make_shared<OracleDrafter>(OracleDrafter::Kind::Right, backend_->vocab_size());
  auto mtp = std::shared_ptr<serving::Drafter>(serving::make_mtp_drafter());
  for (auto drafter : {std::shared_ptr<serving::Drafter>(serving::make_ngram_drafter()),
                       std::shared_ptr<serving::Drafter>(oracle), mtp}) {
    auto s = drafter == mtp ? service(drafter, 4, mtp_backend()) : service(drafter, 4);
    size_t drafted = 0;
    for (size_t i = 0, j = 0; i < all.size(); i += 2, ++j) {
      sampling.seed = 1000 + i;
      oracle->expect(all[i].prompt, base[j].tokens);
      const Output o = run(*s, all[i], sampling);
      drafted += o.drafted;
      EXPECT_TRUE(o == base[j]) << "prompt " << i;
    }
    // Prompt lookup finds little in sampled text; the oracle and the MTP block always draft.
    if (drafter == oracle || drafter == mtp) {
      EXPECT_GT(drafted, 0u);
    }
  }
}

// A token policy acting on drafted positions (forced tokens, weighed alternatives, no ending
// yet) decides on the logits decode would give it, so the output is the plain loop's.
TEST_P(SpeculationExactness, PolicyStepsAreVerifiedUnderThePolicy) {
  const std::vector<Case> all = cases();
  auto plain = service(nullptr, 0);
  std::vector<Output> base;
  for (size_t i = 1; i < all.size(); i += 3)
    base.push_back(run(*plain, all[i], greedy(), std::make_shared<TestPolicy>(*backend_)));
  plain->stop(std::chrono::milliseconds(0));
  auto oracle = std::make_shared<OracleDrafter>(OracleDrafter::Kind::Right, backend_->vocab_size());
  auto s = service(oracle, 4);
  size_t drafted = 0, j = 0;
  for (size_t i = 1; i < all.size(); i += 3, ++j) {
    oracle->expect(all[i].prompt, base[j].tokens);
    const Output o = run(*s, all[i], greedy(), std::make_shared<TestPolicy>(*backend_));
    drafted += o.drafted;
    EXPECT_TRUE(o == base[j]) << "prompt " << i;
  }
  EXPECT_GT(drafted, 0u);
  // "speculation": false: the same output, nothing drafted.
  const Output off = run(*s, all[1], greedy(), std::make_shared<TestPolicy>(*backend_), false);
  EXPECT_TRUE(off == base[0]);
  EXPECT_EQ(off.drafted, 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculationExactness, ::testing::Values("agent", "forged"));

}  // namespace
}  // namespace ds4::test
