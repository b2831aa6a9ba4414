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
  // A restricting policy (a JSON value under a schema) admits only some tokens (an end of
  // generation where it may end); when none of them is left the choice is made as without it.
  std::vector<float> restricted;
  if (policy && policy->restricts()) {
    restricted.assign(logits.begin(), logits.end());
    bool any = false;
    for (size_t i = 0; i < restricted.size(); ++i) {
      const Token tok = static_cast<Token>(i);
      const bool ok = backend.is_end_of_generation(tok) ? policy->may_end() : policy->admits(tok);
      if (!ok) restricted[i] = -std::numeric_limits<float>::infinity();
      else any = any || std::isfinite(restricted[i]);
    }
    if (any) logits = restricted;
    else restricted.clear();
  }
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
                   std::vector<float>& held, size_t* weighing_decodes, std::span<const std::pair<Token, float>> bias,
                   std::vector<float>* seen) {
  std::span<const float> logits = seq.logits();
  std::vector<float> biased;
  if (!bias.empty()) {
    biased.assign(logits.begin(), logits.end());
    for (const auto& [token, b] : bias)
      if (token >= 0 && static_cast<size_t>(token) < biased.size()) biased[token] += b;
    logits = biased;
  }
  if (policy)
    if (const std::optional<size_t> d = weigh_alternatives(*policy, seq, backend, logits, held)) {
      logits = held;
      if (weighing_decodes) *weighing_decodes += *d;
    }
  if (seen) seen->assign(logits.begin(), logits.end());
  return next_token(policy, logits, backend, sample);
}

TokenLogprob token_logprob(std::span<const float> logits, Token token, size_t top, const EngineBackend& backend) {
  TokenLogprob out;
  out.bytes = backend.token_bytes(token);
  out.logprob = static_cast<float>(sampler::log_softmax_at(logits, token));
  if (top == 0) return out;
  std::vector<Token> order;
  for (size_t i = 0; i < logits.size(); ++i)
    if (std::isfinite(logits[i])) order.push_back(static_cast<Token>(i));
  const size_t n = std::min(top, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](Token a, Token b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < n; ++i) {
    std::string bytes;
    try {
      bytes = backend.token_bytes(order[i]);
    } catch (const std::exception&) {
      continue;  // an id without bytes (a control token's slot): not shown
    }
    out.top.emplace_back(std::move(bytes), static_cast<float>(sampler::log_softmax_at(logits, order[i])));
  }
  return out;
}

}  // namespace ds4::serving
