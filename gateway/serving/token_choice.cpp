// One decode step's choice. See token_choice.hpp.
#include "gateway/serving/token_choice.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/sampler/sampler.hpp"

namespace ds4::serving {

namespace {

Token choose(TokenPolicy* policy, std::span<const float> logits, const SampleFn& sample) {
  std::optional<Token> chosen = policy ? policy->choose(logits) : std::nullopt;
  return chosen ? *chosen : sample(logits);
}

}  // namespace

Token next_token(TokenPolicy* policy, std::span<const float> logits, const EngineBackend& backend,
                 const SampleFn& sample) {
  const Token first = choose(policy, logits, sample);
  if (!policy) return first;
  auto excluded = [&](Token t) {
    if (backend.is_end_of_generation(t)) return !policy->may_end();
    return policy->refuses(backend.token_bytes(t));
  };
  if (!excluded(first)) return first;
  std::vector<float> masked(logits.begin(), logits.end());
  if (!policy->may_end())
    for (size_t i = 0; i < masked.size(); ++i)
      if (backend.is_end_of_generation(static_cast<Token>(i))) masked[i] = -std::numeric_limits<float>::infinity();
  // Each round takes one more token out, so this ends; where nothing is left, the first choice.
  for (Token t = first;;) {
    masked[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
    if (std::none_of(masked.begin(), masked.end(), [](float x) { return std::isfinite(x); })) return first;
    t = choose(policy, masked, sample);
    if (!excluded(t)) return t;
  }
}

std::optional<size_t> weigh_alternatives(TokenPolicy& policy, EngineSequence& seq, const EngineBackend& backend,
                                         std::span<const float> logits, std::vector<float>& held) {
  const std::vector<std::string> texts = policy.alternatives();
  if (texts.size() < 2) return std::nullopt;
  std::vector<std::vector<Token>> tokens;
  size_t longest = 0;
  for (const std::string& t : texts) {
    tokens.push_back(backend.encode_plain(t));
    longest = std::max(longest, tokens.back().size());
  }
  const size_t n0 = seq.tokens().size();
  if (longest == 0 || longest - 1 > seq.rollback_room() || n0 + longest > seq.capacity()) return std::nullopt;
  held.assign(logits.begin(), logits.end());
  // Likeliest first tokens first: the best total is then usually found at once, and the others
  // stop as soon as their partial sum falls below it.
  std::vector<double> first(tokens.size(), -std::numeric_limits<double>::infinity());
  for (size_t a = 0; a < tokens.size(); ++a)
    if (!tokens[a].empty()) first[a] = sampler::log_softmax_at(held, tokens[a][0]);
  std::vector<size_t> order(tokens.size());
  for (size_t a = 0; a < order.size(); ++a) order[a] = a;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return first[x] > first[y]; });
  size_t best = 0, decodes = 0;
  double best_lp = -std::numeric_limits<double>::infinity();
  for (size_t a : order) {
    const std::vector<Token>& ts = tokens[a];
    if (ts.empty()) continue;
    double lp = first[a];
    for (size_t i = 1; i < ts.size() && lp >= best_lp; ++i) {
      seq.append(std::span<const Token>(&ts[i - 1], 1));
      ++decodes;
      lp += sampler::log_softmax_at(seq.logits(), ts[i]);
    }
    if (seq.tokens().size() != n0) seq.truncate(n0);
    if (lp > best_lp || (lp == best_lp && a < best)) {
      best_lp = lp;
      best = a;
    }
  }
  policy.prefer(best);
  return decodes;
}

Token choose_token(TokenPolicy* policy, EngineSequence& seq, const EngineBackend& backend, const SampleFn& sample,
                   std::vector<float>& held, size_t* weighing_decodes) {
  std::span<const float> logits = seq.logits();
  if (policy)
    if (const std::optional<size_t> d = weigh_alternatives(*policy, seq, backend, logits, held)) {
      logits = held;
      if (weighing_decodes) *weighing_decodes += *d;
    }
  return next_token(policy, logits, backend, sample);
}

}  // namespace ds4::serving
