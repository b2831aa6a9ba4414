#pragma once
// Reader for the GGML reference vectors (shared/vectors/quant/TYPE.vec, layout in its README).
// The folder comes from env DS4D_QUANT_VECTORS, else the compile-time default
// DS4D_QUANT_VECTORS_DEFAULT (DS4D_SHARED_DIR/vectors/quant).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace ds4::quant::testing {

struct QuantVectors {
  uint32_t ggml_type, n_rows, n_per_row, row_bytes, vec_dot_type, act_bytes, has_dot;
  std::vector<float> src, dequant, act, dot;
  std::vector<uint8_t> quant, act_quant;
};

inline std::string quant_vectors_dir() {
  if (const char* e = std::getenv("DS4D_QUANT_VECTORS"); e && *e) return e;
  return DS4D_QUANT_VECTORS_DEFAULT;
}

inline QuantVectors load_quant_vectors(const std::string& name) {
  const std::string path = quant_vectors_dir() + "/" + name + ".vec";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    if (pos + n > b.size()) throw std::runtime_error(path + ": truncated at byte " + std::to_string(pos));
    std::memcpy(dst, b.data() + pos, n);
    pos += n;
  };
  char magic[4];
  take(magic, 4);
  if (std::memcmp(magic, "DS4V", 4) != 0) throw std::runtime_error(path + ": bad magic");
  uint32_t version;
  take(&version, 4);
  if (version != 1) throw std::runtime_error(path + ": unsupported version " + std::to_string(version));
  QuantVectors v{};
  for (uint32_t* p : {&v.ggml_type, &v.n_rows, &v.n_per_row, &v.row_bytes, &v.vec_dot_type, &v.act_bytes, &v.has_dot})
    take(p, 4);
  const size_t n = size_t{v.n_rows} * v.n_per_row;
  v.src.resize(n);
  take(v.src.data(), n * 4);
  v.quant.resize(size_t{v.n_rows} * v.row_bytes);
  take(v.quant.data(), v.quant.size());
  v.dequant.resize(n);
  take(v.dequant.data(), n * 4);
  v.act.resize(v.n_per_row);
  take(v.act.data(), v.act.size() * 4);
  v.act_quant.resize(v.act_bytes);
  take(v.act_quant.data(), v.act_bytes);
  v.dot.resize(v.n_rows);
  take(v.dot.data(), v.dot.size() * 4);
  if (pos != b.size()) throw std::runtime_error(path + ": " + std::to_string(b.size() - pos) + " trailing bytes");
  return v;
}

}  // namespace ds4::quant::testing
