#pragma once
// The mixture-of-experts FFN on the device (kernels/moe.cuh), each step bit-identical to its part
// of the CPU's model::moe_forward with Exec.exact = false: router selection and weights (no host
// round trip: the expert ids stay on the device), routed expert matvecs addressed by those ids,
// SwiGLU times the router weight, and the sum over slots plus the shared expert. The router
// logits and the shared expert are the plain matvec (matvec.hpp); the Q8_K re-quantization
// between the steps is the activation quantizer's. All calls are asynchronous.
#include <cstddef>
#include <cstdint>

#include "engine/cuda/device.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::cuda {

// A 3-D expert tensor the device reads: n_expert matrices of `rows` rows of `cols` elements,
// one after another (GGUF [cols, rows, n_expert]), in a copy it owns or memory someone else owns.
struct DeviceExperts {
  quant::Type type;
  int64_t n_expert = 0, rows = 0, cols = 0;
  DeviceSpan data;     // where the experts are
  DeviceBuffer owned;  // the copy, when data is one
};

// Copies a host expert tensor to the device. Throws std::invalid_argument for a format without
// an expert kernel (those of routed experts: MXFP4, Q2_K, Q4_K, IQ2_XXS) or a bad shape.
DeviceExperts upload_experts(quant::Type type, const void* data, int64_t n_expert, int64_t rows, int64_t cols);
// The same over device (or registered host) memory: throws as upload_experts, and
// std::invalid_argument when `data` is not n_expert x rows x cols of `type`.
DeviceExperts experts_over(quant::Type type, DeviceSpan data, int64_t n_expert, int64_t rows, int64_t cols);

struct RouterArgs {
  int32_t n_expert = 0, n_used = 0;  // n_used <= 32, n_used <= n_expert <= 1024
  float scale = 1.0f;                // expert_weight_scale
  // Optional spans are absent when empty (DeviceSpan{}).
  DeviceSpan bias;      // [n_expert] f32 selection bias, or none
  DeviceSpan tid2eid;   // hash layer: [n_vocab][n_used] i32, else none
  int64_t n_vocab = 0;  // with tid2eid
  DeviceSpan tokens;    // with tid2eid: [T] i32 token ids
  DeviceSpan error;     // optional i32, set to 1 on a bad token or tid2eid entry
  DeviceSpan probs;     // optional [T][n_expert] f32: the p of every expert
};

// From logits [T][n_expert]: ids [T][n_used] i32 and weights [T][n_used] f32 as
// model::route_token gives them from p = sqrt(softplus(z)) (a bad hash row: ids -1, weights
// NaN, *error = 1), and p itself where a.probs is given. Throws std::invalid_argument on sizes
// outside the limits above or small buffers.
void moe_route(DeviceSpan logits, int T, const RouterArgs& a, DeviceSpan ids, DeviceSpan weights);

// out[p * w.rows + r] = dot(row r of expert ids[p], activation row p / pairs_per_act) for
// p < n_pairs: gate/up take token rows (pairs_per_act = n_used), down its pair's row (1). `act`
// rows in the experts' vec_dot layout, act_row_bytes apart (a multiple of 4). An id outside
// [0, n_expert) gives NaN rows. Throws std::invalid_argument on small buffers.
void moe_expert_matvec(const DeviceExperts& w, DeviceSpan ids, int n_pairs, DeviceSpan act, size_t act_row_bytes,
                       int pairs_per_act, DeviceSpan out);

// The pairs grouped by expert on the device (kernels/moe.cuh moe_group) for moe_expert_grouped:
// order (n_pairs int32), tiles (3 int32 each, max_tiles of them), n_tiles (one int32).
// moe_group_max_tiles is the most tiles n_pairs pairs over n_expert experts can make.
struct MoeGroups {
  DeviceSpan order, tiles, n_tiles;
  int32_t n_pairs = 0, max_tiles = 0;
};
int32_t moe_group_max_tiles(int n_pairs, int n_expert);
// Groups ids (n_pairs int32) into g (sized for n_pairs and n_expert, at most 1024 experts).
// Throws std::invalid_argument on small buffers. Asynchronous (one launch).
void moe_group(DeviceSpan ids, int n_expert, const MoeGroups& g);
// moe_expert_matvec over grouped pairs: the same outputs, bit for bit, each expert's rows read
// once per tile of up to 32 of its pairs, on int8 tensor cores where a tile has more than 8, else
// by the matvec row code (docs/cuda.md §stages). Asynchronous (two launches).
void moe_expert_grouped(const DeviceExperts& w, const MoeGroups& g, DeviceSpan act, size_t act_row_bytes,
                        int pairs_per_act, DeviceSpan out);

// mid[i] = swiglu(gate[i], up[i], clamp) * weights[i / n_ff] for i < n_rows * n_ff (routed
// pairs: weights = the router's, one per pair) or without the product (weights empty: the
// shared expert). Throws std::invalid_argument on small buffers.
void moe_swiglu(DeviceSpan gate, DeviceSpan up, DeviceSpan weights, int64_t n_rows, int64_t n_ff, float clamp,
                DeviceSpan mid);

// out[t][r] = (down[t * n_used][r] + ... + down[t * n_used + n_used - 1][r], from 0) +
// shared[t][r]. Throws std::invalid_argument on small buffers.
void moe_sum(DeviceSpan down, DeviceSpan shared, int64_t T, int n_used, int64_t n_embd, DeviceSpan out);

}  // namespace ds4::cuda
