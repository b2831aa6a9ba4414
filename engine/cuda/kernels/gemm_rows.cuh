#pragma once
// Which activation rows a GEMM thread block reads and which output rows it writes: the plain
// GEMM's n consecutive tokens (out[t * rows + r]), or a tile of an expert's (token, slot) pairs
// from the MoE grouping (moe.cuh's moe_tile, for its GEMM and its grouped matvec alike), whose
// rows are gathered from the pairs' activation rows and scattered to the pairs' output rows. The tile's arithmetic is
// the same either way, so a pair's outputs are the bits the plain GEMM (and the matvec) gives its row.
#include <cstdint>

namespace ds4::cuda::kernels {

struct GemmRows {
  const uint8_t* act = nullptr;  // activation rows in the weight's vec_dot layout
  int64_t act_row_bytes = 0;     // a multiple of 4
  float* out = nullptr;
  int64_t out_row = 0;             // floats from one output row to the next: the weight's rows
  const int32_t* pairs = nullptr;  // null: token t is row t; else tile entry t is pair pairs[t]
  int32_t pairs_per_act = 1;       // with pairs: pair p reads activation row p / pairs_per_act
  int64_t n = 0;                   // tokens (or pairs) of the tile, >= 1

  // Tokens past the end read as the last one (and are never written).
  __device__ const uint8_t* act_row(int64_t t) const {
    const int64_t i = t < n ? t : n - 1;
    return act + (pairs ? pairs[i] / pairs_per_act : i) * act_row_bytes;
  }
  __device__ float* out_row_of(int64_t t) const { return out + (pairs ? pairs[t] : t) * out_row; }
};

}  // namespace ds4::cuda::kernels
