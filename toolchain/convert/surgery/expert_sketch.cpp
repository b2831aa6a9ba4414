// Random-coordinate sketches of routed experts; see expert_sketch.hpp.
#include "toolchain/convert/surgery/expert_sketch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "engine/quant/quant.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/official_formats.hpp"

namespace ds4::convert::surgery {
namespace {

constexpr const char* kParts[] = {".w1", ".w3", ".w2"};

struct Part {
  const SourceTensor *w = nullptr, *s = nullptr;
  uint64_t rows = 0, cols = 0;  // unpacked
};

Part find_part(const Checkpoint& ck, uint32_t layer, uint32_t e, const char* part) {
  const std::string b = "layers." + std::to_string(layer) + ".ffn.experts." + std::to_string(e) + part;
  Part p;
  p.w = ck.find(b + ".weight");
  p.s = ck.find(b + ".scale");
  if (!p.w || p.w->shape.size() != 2) throw ConvertError(ck.dir(), b + ".weight", "missing or not 2-D");
  p.rows = p.w->shape[0];
  p.cols = p.w->dtype == Dtype::I8 ? p.w->shape[1] * 2 : p.w->shape[1];
  const bool scaled = p.w->dtype == Dtype::I8 || p.w->dtype == Dtype::F8_E4M3;
  if (scaled && (!p.s || p.s->dtype != Dtype::F8_E8M0))
    throw ConvertError(ck.dir(), b + ".scale", "missing E8M0 scale");
  if (!scaled && p.w->dtype != Dtype::BF16 && p.w->dtype != Dtype::F16 && p.w->dtype != Dtype::F32)
    throw ConvertError(ck.dir(), b + ".weight", "cannot decode " + std::string(dtype_name(p.w->dtype)));
  return p;
}

// One element, decoded from its block alone.
float element(const Part& p, uint64_t r, uint64_t c) {
  const auto* w = reinterpret_cast<const uint8_t*>(p.w->data);
  switch (p.w->dtype) {
    case Dtype::I8: {  // FP4 E2M1, two per byte (element 2j low nibble), one E8M0 per 32
      const uint8_t byte = w[r * (p.cols / 2) + c / 2];
      const auto* s = reinterpret_cast<const uint8_t*>(p.s->data);
      return e2m1_value(c % 2 ? byte >> 4 : byte & 0xf) * e8m0_value(s[r * (p.cols / 32) + c / 32]);
    }
    case Dtype::F8_E4M3: {
      const auto* s = reinterpret_cast<const uint8_t*>(p.s->data);
      return e4m3_value(w[r * p.cols + c]) * e8m0_value(s[(r / 128) * ((p.cols + 127) / 128) + c / 128]);
    }
    case Dtype::F32: {
      float f;
      std::memcpy(&f, p.w->data + 4 * (r * p.cols + c), 4);
      return f;
    }
    default: {  // BF16 / F16
      float f;
      quant::traits(p.w->dtype == Dtype::BF16 ? quant::Type::BF16 : quant::Type::F16)
          .dequantize(p.w->data + 2 * (r * p.cols + c), &f, 1);
      return f;
    }
  }
}

uint16_t to_half(float f) {
  uint16_t h;
  quant::traits(quant::Type::F16).quantize(&f, &h, 1);
  return h;
}
float from_half(uint16_t h) {
  float f;
  quant::traits(quant::Type::F16).dequantize(reinterpret_cast<const std::byte*>(&h), &f, 1);
  return f;
}

Similarity gram(uint32_t n, const std::vector<std::vector<float>>& v) {
  Similarity s;
  s.n_expert = n;
  s.cosine.assign(size_t(n) * n, 0.0f);
  std::vector<float> norm(n);
  for (uint32_t a = 0; a < n; ++a) {
    float d = 0;
    for (float x : v[a]) d += x * x;
    norm[a] = std::sqrt(d);
  }
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = a; b < n; ++b) {
      float d = 0;
      for (size_t i = 0; i < v[a].size(); ++i) d += v[a][i] * v[b][i];
      const float c = norm[a] > 0 && norm[b] > 0 ? d / (norm[a] * norm[b]) : 0.0f;
      s.cosine[size_t(a) * n + b] = s.cosine[size_t(b) * n + a] = c;
    }
  return s;
}

}  // namespace

Similarity sketch_similarity(const Checkpoint& ck, uint32_t layer, uint32_t n, const SketchOptions& o) {
  std::vector<Part> shape;
  uint64_t total = 0;
  for (const char* part : kParts) {
    shape.push_back(find_part(ck, layer, 0, part));
    total += shape.back().rows * shape.back().cols;
  }
  const uint64_t gram_bytes = uint64_t(n) * n * 4;
  if (o.max_memory <= gram_bytes + uint64_t(n) * 2)
    throw ConvertError(ck.dir(), "",
                       "--max-memory " + std::to_string(o.max_memory) + " bytes cannot hold the " + std::to_string(n) +
                           "x" + std::to_string(n) + " Gram matrix and a sketch");
  uint64_t S = o.coordinates ? o.coordinates : (o.max_memory - gram_bytes) / (uint64_t(n) * 2);
  S = std::min(S, total);
  if (uint64_t(n) * S * 2 + gram_bytes > o.max_memory)
    throw ConvertError(ck.dir(), "", std::to_string(S) + " coordinates exceed --max-memory");
  // The same coordinates for every expert of the layer: drawn once, sorted for locality.
  std::mt19937_64 rng(o.seed ^ (uint64_t(layer) * 0x9e3779b97f4a7c15ull));
  std::vector<uint64_t> coords;
  if (S == total) {
    coords.resize(total);
    for (uint64_t i = 0; i < total; ++i) coords[i] = i;
  } else {
    std::uniform_int_distribution<uint64_t> pick(0, total - 1);
    coords.resize(S);
    for (uint64_t& c : coords) c = pick(rng);
    std::sort(coords.begin(), coords.end());
  }
  std::vector<std::vector<uint16_t>> sketch(n, std::vector<uint16_t>(S));
  for (uint32_t e = 0; e < n; ++e) {
    Part parts[3];
    for (int i = 0; i < 3; ++i) {
      parts[i] = find_part(ck, layer, e, kParts[i]);
      if (parts[i].rows != shape[i].rows || parts[i].cols != shape[i].cols)
        throw ConvertError(ck.dir(), parts[i].w->name, "shape differs from expert 0's");
    }
    for (uint64_t i = 0; i < S; ++i) {
      uint64_t c = coords[i];
      int k = 0;
      while (c >= parts[k].rows * parts[k].cols) c -= parts[k].rows * parts[k].cols, ++k;
      sketch[e][i] = to_half(element(parts[k], c / parts[k].cols, c % parts[k].cols));
    }
  }
  // fp32 Gram over the fp16 sketches, one expert pair at a time (no fp32 copy of the sketches).
  Similarity s;
  s.n_expert = n;
  s.coordinates = S;
  s.expert_elements = total;
  s.memory_bytes = uint64_t(n) * S * 2 + gram_bytes;
  s.cosine.assign(size_t(n) * n, 0.0f);
  std::vector<float> norm(n);
  for (uint32_t a = 0; a < n; ++a) {
    float d = 0;
    for (uint16_t h : sketch[a]) d += from_half(h) * from_half(h);
    norm[a] = std::sqrt(d);
  }
  for (uint32_t a = 0; a < n; ++a)
    for (uint32_t b = a; b < n; ++b) {
      float d = 0;
      for (uint64_t i = 0; i < S; ++i) d += from_half(sketch[a][i]) * from_half(sketch[b][i]);
      const float c = norm[a] > 0 && norm[b] > 0 ? d / (norm[a] * norm[b]) : 0.0f;
      s.cosine[size_t(a) * n + b] = s.cosine[size_t(b) * n + a] = c;
    }
  return s;
}

Similarity exact_similarity(const Checkpoint& ck, uint32_t layer, uint32_t n) {
  std::vector<std::vector<float>> v(n);
  for (uint32_t e = 0; e < n; ++e)
    for (const char* part : kParts) {
      const Part p = find_part(ck, layer, e, part);
      for (uint64_t r = 0; r < p.rows; ++r)
        for (uint64_t c = 0; c < p.cols; ++c) v[e].push_back(element(p, r, c));
    }
  Similarity s = gram(n, v);
  s.coordinates = s.expert_elements = v.empty() ? 0 : v[0].size();
  return s;
}

}  // namespace ds4::convert::surgery
