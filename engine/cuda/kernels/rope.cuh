#pragma once
// RoPE rotation in the Fast order (docs/arithmetic.md §rope), bit-identical to the CPU's
// engine/model/rope.cpp rope_apply: y0 = x0*c - x1*s, y1 = x0*s + x1*c, two products and one
// add or subtract each, every one rounded (the _rn intrinsics: no FMA). The angles are not
// computed here: the host's rope_angles (exact = false) gives the cos/sin table, one per row.
#include <cstdint>

#include "engine/quant/block_arith.hpp"
#include "engine/quant/fast_math.hpp"

// x: rows x n_head x head_dim floats, rotated in place on the last n_rot dims of each head;
// cs: rows x n_rot floats (c0, s0, c1, s1, ... of that row's position). One thread per pair:
// thread p is row p / (n_head * n_rot/2), head (p / (n_rot/2)) % n_head, pair p % (n_rot/2).
extern "C" __global__ void ds4_rope(float* x, const float* cs, int64_t rows, int32_t n_head, int32_t head_dim,
                                    int32_t n_rot) {
  namespace arith = ds4::quant::arith;
  const int64_t pairs = n_rot / 2;
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= rows * n_head * pairs) return;
  const int64_t k = p % pairs, head = p / pairs;  // head counts over all rows
  const int64_t row = head / n_head;
  float* tail = x + head * head_dim + (head_dim - n_rot);
  const float c = cs[row * n_rot + 2 * k], s = cs[row * n_rot + 2 * k + 1];
  const float x0 = tail[2 * k], x1 = tail[2 * k + 1];
  tail[2 * k] = ds4::quant::fast::sub(arith::mul(x0, c), arith::mul(x1, s));
  tail[2 * k + 1] = arith::add(arith::mul(x0, s), arith::mul(x1, c));
}
