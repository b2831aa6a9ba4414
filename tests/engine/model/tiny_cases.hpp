#pragma once
// Reader for the ds4-tiny reference vectors (cases.bin, see shared/vectors/ds4-tiny/README.md):
// logits produced by antirez/ds4's CPU path on a tiny DS4-layout model.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ds4::test {

struct TinyCase {
  std::string name;
  std::vector<int32_t> prompt;
  std::vector<float> logits;                   // after the whole prompt
  std::vector<int32_t> gen;                    // greedy continuation
  std::vector<std::vector<float>> gen_logits;  // after feeding gen[k]
  std::vector<std::pair<uint32_t, std::vector<float>>> prefixes;
};

struct TinyCases {
  uint32_t n_vocab = 0;
  std::vector<TinyCase> cases;
};

inline std::filesystem::path tiny_vectors_dir() {
  if (const char* e = std::getenv("DS4D_DS4_VECTORS")) return e;
#ifdef DS4D_DS4_VECTORS_DEFAULT
  return DS4D_DS4_VECTORS_DEFAULT;
#else
  return "../shared/vectors/ds4-tiny";
#endif
}

inline TinyCases load_tiny_cases(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + file.string());
  auto u32 = [&] {
    uint32_t v;
    if (!in.read(reinterpret_cast<char*>(&v), 4)) throw std::runtime_error("truncated " + file.string());
    return v;
  };
  auto floats = [&](size_t n) {
    std::vector<float> v(n);
    if (!in.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * 4))) throw std::runtime_error("truncated");
    return v;
  };
  auto ints = [&](size_t n) {
    std::vector<int32_t> v(n);
    if (!in.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * 4))) throw std::runtime_error("truncated");
    return v;
  };
  TinyCases tc;
  if (u32() != 0x54345344u) throw std::runtime_error("bad magic in " + file.string());
  if (u32() != 1) throw std::runtime_error("bad version in " + file.string());
  tc.n_vocab = u32();
  const uint32_t n_cases = u32();
  for (uint32_t c = 0; c < n_cases; c++) {
    TinyCase k;
    char name[16];
    in.read(name, 16);
    k.name.assign(name, strnlen(name, 16));
    k.prompt = ints(u32());
    k.logits = floats(tc.n_vocab);
    const uint32_t n_gen = u32();
    k.gen = ints(n_gen);
    for (uint32_t g = 0; g < n_gen; g++) k.gen_logits.push_back(floats(tc.n_vocab));
    const uint32_t n_prefix = u32();
    for (uint32_t p = 0; p < n_prefix; p++) {
      const uint32_t len = u32();
      k.prefixes.emplace_back(len, floats(tc.n_vocab));
    }
    tc.cases.push_back(std::move(k));
  }
  return tc;
}

}  // namespace ds4::test
