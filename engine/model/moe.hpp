#pragma once
// The DS4 FFN sublayer: a routed mixture of experts plus one always-on shared expert.
// Router: p_i = sqrt(softplus(gate_inp . x)). Hash layers (the first hash_layer_count) take
// their experts from the token id (tid2eid) and ignore the selection bias; the others take the
// top n_used of p_i + bias_i. Either way the expert weights are the unbiased p of the selected
// experts, normalised to sum 1 and scaled by expert_weights_scale. Each expert is a SwiGLU
// with the gate clamped from above and the up projection clamped both ways; the router weight
// multiplies the hidden vector before the down projection. Routed experts consume Q8_K
// activations, and the hidden vector is re-quantized to Q8_K before the down projection.
#include <cstdint>
#include <vector>

#include "engine/model/linear.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/weights.hpp"

namespace ds4::model {

struct RoutedChoice {
  int32_t expert[32];
  float weight[32];
};

// silu(min(g, clamp)) * clamp(u, +-clamp) (no clamping when clamp <= 1e-6); Math: the mode's silu.
template <class Math = ExactMath>
inline float swiglu_clamped(float g, float u, float clamp) {
  if (clamp > 1.0e-6f) {
    if (g > clamp) g = clamp;
    if (u > clamp) u = clamp;
    if (u < -clamp) u = -clamp;
  }
  return Math::silu(g) * u;
}

// Expert probabilities from router logits: sqrt(softplus(z)), glibc's softplus when exact, the
// Fast order's otherwise; sqrt correctly rounded in both.
void router_probs(const float* logits, uint32_t n_expert, bool exact, float* probs);
// Selection and weights for one token.
void route_token(const ModelConfig& cfg, const LayerWeights& lw, bool hash_layer, int32_t token, const float* probs,
                 RoutedChoice& out);

struct MoeScratch {
  QuantAct xq, gather, midq, shq;
  std::vector<float> logits, probs, gate, up, mid, down, sh_gate, sh_up, sh_mid, sh_out;
  std::vector<RoutedChoice> choice;
  std::vector<std::vector<uint32_t>> pairs_of_expert;  // pair id = t * n_used + slot
  std::vector<uint32_t> at;                            // pair id -> its row of `down` (rows in expert order)
};

// ffn_out[t] = routed(xn[t]) + shared(xn[t]) for T tokens; `hash_layer` routes by token id
// (tid2eid), `clamp` is the layer's SwiGLU clamp.
void moe_forward(const Exec& ex, const ModelConfig& cfg, const LayerWeights& lw, bool hash_layer, float clamp,
                 const float* xn, const int32_t* tokens, int T, float* ffn_out, MoeScratch& s);

}  // namespace ds4::model
