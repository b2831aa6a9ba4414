#pragma once
// Choosing the next token from a logits vector: greedy (temperature <= 0) or temperature,
// top_k, min_p and top_p, with the reference server's defaults. A Sampler owns its random stream
// (random.hpp) seeded from `seed`, and all arithmetic after the logits is in double, so a seed
// gives the same tokens on any platform for the same logits. The order the settings apply in, the
// ties and the cost: docs/engine.md §sampler.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sampler/random.hpp"

namespace ds4::sampler {

struct SamplerConfig {
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.05f;
  uint64_t seed = 0x5eed;

  bool greedy() const { return temperature <= 0.0f || top_k == 1; }
};

struct SampledToken {
  int32_t token = -1;
  // log p(token) under the model's own distribution (softmax of the raw logits, temperature 1,
  // no filters): what an API reports as the token's logprob.
  float logprob = 0.0f;
};

class Sampler {
 public:
  // Throws std::invalid_argument for settings outside their domain (NaN temperature, top_k < 0,
  // top_p outside (0, 1], min_p outside [0, 1]).
  explicit Sampler(SamplerConfig config);

  // Throws std::invalid_argument when no logit is finite.
  int32_t sample(std::span<const float> logits);
  // Same choice (and the same random stream) plus the chosen token's logprob; one extra pass.
  SampledToken sample_with_logprob(std::span<const float> logits);

  const SamplerConfig& config() const { return config_; }
  // Restarts the random stream as if freshly constructed with `seed`.
  void reseed(uint64_t seed);

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  int32_t sample_filtered(std::span<const float> logits, float max_logit);

  SamplerConfig config_;
  Xoshiro256 rng_;
  std::vector<Candidate> candidates_;  // scratch
  std::vector<double> weights_;        // scratch
};

// Greedy choice: the highest finite logit, the lowest id among equals; -1 when none is finite.
int32_t argmax(std::span<const float> logits);
// log softmax(logits)[token] over the finite logits.
float log_softmax_at(std::span<const float> logits, int32_t token);

}  // namespace ds4::sampler
