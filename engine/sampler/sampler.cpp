// Temperature / top-k / min-p / top-p sampling; semantics in sampler.hpp.
#include "engine/sampler/sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ds4::sampler {

int32_t argmax(std::span<const float> logits) {
  int32_t best = -1;
  float best_logit = 0.0f;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (!std::isfinite(v)) continue;
    if (best < 0 || v > best_logit) {
      best = static_cast<int32_t>(i);
      best_logit = v;
    }
  }
  return best;
}

float log_softmax_at(std::span<const float> logits, int32_t token) {
  const int32_t top = argmax(logits);
  if (top < 0 || token < 0 || static_cast<size_t>(token) >= logits.size() ||
      !std::isfinite(logits[static_cast<size_t>(token)]))
    return -INFINITY;
  const double max_logit = logits[static_cast<size_t>(top)];
  double sum = 0.0;
  for (float v : logits)
    if (std::isfinite(v)) sum += std::exp(static_cast<double>(v) - max_logit);
  return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(token)]) - max_logit - std::log(sum));
}

Sampler::Sampler(SamplerConfig config) : config_(config), rng_(config.seed) {
  if (std::isnan(config_.temperature)) throw std::invalid_argument("sampler: temperature is NaN");
  if (config_.top_k < 0) throw std::invalid_argument(fmt::format("sampler: top_k {} is negative", config_.top_k));
  if (!(config_.top_p > 0.0f && config_.top_p <= 1.0f))
    throw std::invalid_argument(fmt::format("sampler: top_p {} is outside (0, 1]", config_.top_p));
  if (!(config_.min_p >= 0.0f && config_.min_p <= 1.0f))
    throw std::invalid_argument(fmt::format("sampler: min_p {} is outside [0, 1]", config_.min_p));
}

void Sampler::reseed(uint64_t seed) {
  config_.seed = seed;
  rng_.reseed(seed);
}

int32_t Sampler::sample(std::span<const float> logits) {
  const int32_t top = argmax(logits);
  if (top < 0) throw std::invalid_argument(fmt::format("sampler: none of the {} logits is finite", logits.size()));
  if (config_.greedy()) return top;
  return sample_filtered(logits, logits[static_cast<size_t>(top)]);
}

SampledToken Sampler::sample_with_logprob(std::span<const float> logits) {
  SampledToken out;
  out.token = sample(logits);
  out.logprob = log_softmax_at(logits, out.token);
  return out;
}

int32_t Sampler::sample_filtered(std::span<const float> logits, float max_logit) {
  const double inv_t = 1.0 / static_cast<double>(config_.temperature);
  const double top = static_cast<double>(max_logit);
  auto scaled = [&](float v) { return (static_cast<double>(v) - top) * inv_t; };
  // min_p is a threshold on the scaled logit: p_i >= min_p * p_max <=> s_i >= log(min_p). The top
  // token always passes (s = 0), and the ratio to p_max does not depend on the normaliser.
  const double min_scaled = config_.min_p > 0.0f ? std::log(static_cast<double>(config_.min_p)) : -INFINITY;
  auto higher = [](const Candidate& a, const Candidate& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
  };

  const bool cut_p = config_.top_p < 1.0f;
  // 1. Candidates and the normaliser of the distribution top_p is measured on (the top-k
  //    survivors, or all finite logits). Without top-k, tokens below min_p are dropped right
  //    away and only contribute to the normaliser.
  candidates_.clear();
  double normaliser = 0.0;
  const size_t k = static_cast<size_t>(config_.top_k);
  if (k > 0) {
    for (size_t i = 0; i < logits.size(); ++i)
      if (std::isfinite(logits[i])) candidates_.push_back({static_cast<int32_t>(i), logits[i]});
    if (k < candidates_.size()) {
      std::nth_element(candidates_.begin(), candidates_.begin() + static_cast<long>(k), candidates_.end(), higher);
      candidates_.resize(k);
    }
    for (const Candidate& c : candidates_) normaliser += std::exp(scaled(c.logit));
    std::erase_if(candidates_, [&](const Candidate& c) { return scaled(c.logit) < min_scaled; });
  } else {
    for (size_t i = 0; i < logits.size(); ++i) {
      const float v = logits[i];
      if (!std::isfinite(v)) continue;
      const double s = scaled(v);
      if (cut_p) normaliser += std::exp(s);  // only top_p needs the mass of dropped tokens
      if (s >= min_scaled) candidates_.push_back({static_cast<int32_t>(i), v});
    }
  }

  // 2. Weights; with top_p, in probability order and cut at the first prefix reaching the mass.
  if (cut_p) std::sort(candidates_.begin(), candidates_.end(), higher);
  weights_.resize(candidates_.size());
  const double target = static_cast<double>(config_.top_p) * normaliser;
  double total = 0.0;
  size_t kept = candidates_.size();
  for (size_t i = 0; i < candidates_.size(); ++i) {
    weights_[i] = std::exp(scaled(candidates_[i].logit));
    total += weights_[i];
    if (cut_p && total >= target) {
      kept = i + 1;
      break;
    }
  }

  // 3. The draw, proportional to the kept weights.
  double r = rng_.uniform() * total;
  for (size_t i = 0; i < kept; ++i) {
    r -= weights_[i];
    if (r < 0.0) return candidates_[i].id;
  }
  return candidates_[kept - 1].id;  // rounding left r at or just above zero
}

}  // namespace ds4::sampler
