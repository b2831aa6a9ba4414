#pragma once
// Expert similarity by random-coordinate sketching (docs/surgery.md §sketching). An expert is the
// concatenation of its w1, w3, w2 matrices; its sketch is its values at S coordinates drawn once
// per layer from a fixed seed, the same coordinates for every expert of the layer, so sketches
// are comparable. Each value is decoded on its own from the packed source (FP4 nibble times its
// block's E8M0 scale, FP8 times its 128x128 block scale, BF16/F16/F32 directly): no expert is
// ever decoded whole, let alone held as fp32. Sketches are stored fp16 (S x 2 bytes per expert)
// and the cosine Gram matrix accumulated in fp32; S is the largest count for which
// n_expert * S * 2 + n_expert^2 * 4 bytes fit in `max_memory`, capped at the expert's size (then
// the sketch is exact).
#include <cstdint>
#include <vector>

#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert::surgery {

struct SketchOptions {
  uint64_t max_memory = uint64_t(2) << 30;
  uint64_t coordinates = 0;  // 0: as many as max_memory allows
  uint64_t seed = 0x5eed;
};

struct Similarity {
  uint32_t n_expert = 0;
  uint64_t coordinates = 0, expert_elements = 0;
  uint64_t memory_bytes = 0;  // sketches + Gram, what max_memory bounds
  std::vector<float> cosine;  // n_expert x n_expert, row-major
  float at(uint32_t a, uint32_t b) const { return cosine[size_t(a) * n_expert + b]; }
};

// Cosine similarity of the routed experts of `layer` ("layers.L.ffn.experts.E.w{1,2,3}").
// Throws ConvertError when an expert is missing or in a format it cannot decode.
Similarity sketch_similarity(const Checkpoint& ck, uint32_t layer, uint32_t n_expert, const SketchOptions& o = {});

// The exact cosine (every element decoded, fp32 copies of every expert): the reference the
// sketch is tested against, for small models only.
Similarity exact_similarity(const Checkpoint& ck, uint32_t layer, uint32_t n_expert);

}  // namespace ds4::convert::surgery
