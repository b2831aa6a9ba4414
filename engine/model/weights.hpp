#pragma once
// The weight table: every DS4 tensor bound once by name into a typed view of the mapped GGUF,
// so the forward pass addresses layer.attn_q_a instead of looking strings up per token.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/kernels/matmul.hpp"
#include "engine/quant/quant_type.hpp"

namespace ds4::model {

struct Tensor {
  std::string name;
  quant::Type type = quant::Type::F32;
  uint32_t ndim = 0;
  std::array<uint64_t, 4> ne{0, 0, 0, 0};  // ne[0] is the contiguous (input) dim
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;

  bool present() const { return data != nullptr; }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
  const uint16_t* f16() const { return reinterpret_cast<const uint16_t*>(data); }
  const int32_t* i32() const { return reinterpret_cast<const int32_t*>(data); }
  // A 2D weight as rows of ne[0] inputs.
  kernels::WeightView view() const { return {type, data, int64_t(ne[1]), int64_t(ne[0])}; }
  // Rows [row0, row0 + n) of a 2D weight.
  kernels::WeightView rows(int64_t row0, int64_t n) const;
  // Expert e of a 3D expert tensor [in, out, n_expert].
  kernels::WeightView expert(int64_t e) const;
};

struct HcWeights {
  Tensor fn, scale, base;  // fn [n_hc*n_embd, (2+n_hc)*n_hc] F16; scale [3]; base [(2+n_hc)*n_hc]
};

struct CompressorWeights {
  Tensor ape, kv, gate, norm;
};

struct LayerWeights {
  HcWeights hc_attn, hc_ffn;
  Tensor attn_norm, attn_q_a, attn_q_a_norm, attn_q_b, attn_kv, attn_kv_a_norm, attn_sinks;
  Tensor attn_output_a, attn_output_b;
  CompressorWeights attn_compressor;     // ratio != 0
  Tensor indexer_q_b, indexer_proj;      // ratio == 4
  CompressorWeights indexer_compressor;  // ratio == 4
  Tensor ffn_norm, ffn_gate_inp, exp_probs_b, ffn_gate_tid2eid;
  Tensor ffn_gate_exps, ffn_up_exps, ffn_down_exps;
  Tensor ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp;
};

struct Weights {
  Tensor token_embd, output_hc_fn, output_hc_scale, output_hc_base, output_norm, output;
  std::vector<LayerWeights> layers;
};

}  // namespace ds4::model
