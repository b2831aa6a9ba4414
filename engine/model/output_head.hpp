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

// The tensors of a head: the model's own, or an MTP block's collapse and norm with the model's
// output projection.
struct HeadWeights {
  const Tensor *hc_fn, *hc_scale, *hc_base, *norm, *output;
};
inline HeadWeights head_weights(const Weights& w) {
  return {&w.output_hc_fn, &w.output_hc_scale, &w.output_hc_base, &w.output_norm, &w.output};
}

// H: T x hc_dim; logits: T x n_vocab.
void output_head(const Exec& ex, const ModelConfig& cfg, const HeadWeights& w, const float* H, int T, float* logits,
                 HeadScratch& s);
inline void output_head(const Exec& ex, const ModelConfig& cfg, const Weights& w, const float* H, int T, float* logits,
                        HeadScratch& s) {
  output_head(ex, cfg, head_weights(w), H, T, logits, s);
}

}  // namespace ds4::model
