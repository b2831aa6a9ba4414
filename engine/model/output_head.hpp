#pragma once
// The output head: collapse the n_hc residual streams into one vector with sigmoid weights
// computed from the (weightless RMS-normed) streams, RMSNorm it with output_norm and project
// to vocabulary logits with the Q8_0 LM head. No Sinkhorn here, and the sigmoid is the
// branching numerically stable one.
#include <vector>

#include "engine/model/linear.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/weights.hpp"

namespace ds4::model {

struct HeadScratch {
  QuantAct q;
  std::vector<float> flat, pre, y, norm;
};

// H: T x hc_dim; logits: T x n_vocab.
void output_head(const Exec& ex, const ModelConfig& cfg, const Weights& w, const float* H, int T, float* logits,
                 HeadScratch& s);

}  // namespace ds4::model
