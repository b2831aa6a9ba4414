#pragma once
// One DS4 block's stateless parts on the device, as engine/model/forward.cpp orders them on the
// CPU in Fast mode (bit for bit): HC pre (the weightless RMSNorm of the flat streams, the F16 mix
// projection, the Sinkhorn split and weighted sum, RMSNorm with the sublayer's norm) and the FFN
// sublayer (HC pre, the routed and shared experts, HC post). docs/cuda.md §forward.
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/weights.hpp"

namespace ds4::model::device {

struct LayerScratch {
  cuda::DeviceBuffer flat, mix, split, x, xn, act, xq;
  cuda::DeviceBuffer logits, ids, weights, error, gate, up, mid, midq, down, sh_gate, sh_up, sh_mid, sh_out, out;
  cuda::DeviceBuffer order, tiles, n_tiles;  // the pairs grouped by expert (more than one token)
};

// HC pre for T tokens of H (T x hc_dim): fills s.split (the split hc_post needs) and s.xn (T x
// n_embd, the sublayer's normed input). Asynchronous.
void hc_pre(const DeviceWeights& dw, const ModelConfig& cfg, const HcWeights& hw, const Tensor& norm,
            cuda::DeviceSpan H, int T, LayerScratch& s);

// The FFN sublayer of layer `il` for T tokens: H_out = hc_post(moe(hc_pre(H))). tokens: T int32
// ids on the device (hash layers route by them). H_out must not be H. A hash layer that meets a
// token its tid2eid table cannot route sets the device word `route_error` to 1 when one is given
// (the caller reads it once its pass is queued: check_route_error); without one this waits for
// the device and throws std::runtime_error itself.
void ffn_sublayer(const DeviceWeights& dw, const ModelConfig& cfg, const LayerWeights& lw, bool hash_layer, float clamp,
                  cuda::DeviceSpan tokens, cuda::DeviceSpan H, int T, cuda::DeviceSpan H_out, LayerScratch& s,
                  cuda::DeviceSpan route_error = {});

// Waits for the device, reads the word ffn_sublayer's hash layers set and clears it; throws
// std::runtime_error when set.
void check_route_error(cuda::DeviceSpan route_error);

}  // namespace ds4::model::device
