#pragma once
// The output head on the device (engine/model/output_head.cpp in Fast mode, bit for bit): the
// weightless RMSNorm of the flat streams, the F16 hc_fn projection, the collapse with the stable
// sigmoid, RMSNorm with output_norm, the Q8_0 LM head.
#include "engine/cuda/device.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/output_head.hpp"

namespace ds4::model::device {

struct HeadScratch {
  cuda::DeviceBuffer flat, pre, y, norm, act;
};

// H: T x hc_dim floats on the device; logits: T x n_vocab floats. Grows `s` as needed. Throws
// std::invalid_argument for buffers too small. Asynchronous.
void output_head(const DeviceWeights& dw, const ModelConfig& cfg, const HeadWeights& w, cuda::DeviceSpan H, int T,
                 cuda::DeviceSpan logits, HeadScratch& s);

}  // namespace ds4::model::device
