#pragma once
// An MTP sidecar for the ds4-tiny model, written by the tests that need one (mtp_test.cpp,
// device_mtp_gpu_test.cpp): no sidecar ships with the vectors; and a CPU target and drafter beside
// another backend's, for the tests that compare them.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "engine/model/mtp.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace ds4::test {

// A sidecar for the base: the block is a copy of the base's first raw-window layer (its tensors
// renamed mtp.0.*), e_proj/h_proj random Q8_0, the head's collapse from the base's, the norms
// random in [0.5, 1.5). `skip` leaves one tensor out; `bind` false writes no binding.
inline void write_sidecar(const std::filesystem::path& out, const std::string& skip = "", bool bind = true) {
  const gguf::GgufFile base = gguf::GgufFile::open((tiny_vectors_dir() / "model.gguf").string());
  gguf::GgufWriter w;
  for (const gguf::KeyValue& kv : base.metadata())
    if (kv.key.rfind("deepseek4.", 0) == 0 || kv.key == "general.architecture") w.set(kv.key, kv.value);
  w.set("ds4d.convert.role", "mtp");
  if (bind) w.set(gguf::kMtpBaseDigestKey, gguf::mtp_base_digest(base));
  const auto ratios = base.get_array<uint32_t>("deepseek4.attention.compress_ratios");
  size_t il = 0;
  while (ratios[il] != 0) il++;
  const std::string prefix = "blk." + std::to_string(il) + ".";
  const uint64_t D = base.get<uint32_t>("deepseek4.embedding_length");
  const uint64_t n_expert = base.get<uint32_t>("deepseek4.expert_count");
  auto keep = std::make_shared<std::vector<std::vector<std::byte>>>();
  auto add = [&](const std::string& name, quant::Type t, std::vector<uint64_t> dims, std::vector<std::byte> bytes) {
    if (name == skip) return;
    keep->push_back(std::move(bytes));
    w.add_tensor(name, t, std::move(dims), keep->back());
  };
  auto floats = [](const std::vector<float>& v) {
    std::vector<std::byte> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  bool has_bias = false;
  for (const gguf::TensorInfo& t : base.tensors()) {
    if (t.name.rfind(prefix, 0) != 0 || t.name.find("tid2eid") != std::string::npos) continue;
    const auto span = base.bytes(t);
    has_bias |= t.name == prefix + "exp_probs_b.bias";
    add("mtp.0." + t.name.substr(prefix.size()), t.type, t.dims, std::vector<std::byte>(span.begin(), span.end()));
  }
  if (!has_bias)
    add("mtp.0.exp_probs_b.bias", quant::Type::F32, {n_expert}, floats(std::vector<float>(n_expert, 0.0f)));
  for (const char* n : {"hc_head_fn", "hc_head_scale", "hc_head_base"}) {
    const gguf::TensorInfo* t = base.find_tensor(std::string("output_hc_") + (n + 8) + ".weight");
    const auto span = base.bytes(*t);
    add(std::string("mtp.0.") + n + ".weight", t->type, t->dims, std::vector<std::byte>(span.begin(), span.end()));
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f / std::sqrt(float(D)));
  for (const char* n : {"e_proj", "h_proj"}) {
    std::vector<float> m(D * D);
    for (float& x : m) x = nd(rng);
    std::vector<std::byte> q(quant::row_bytes(quant::Type::Q8_0, D) * D);
    for (uint64_t r = 0; r < D; r++)
      quant::quantize_row(quant::Type::Q8_0, m.data() + r * D, q.data() + r * quant::row_bytes(quant::Type::Q8_0, D),
                          int64_t(D), nullptr);
    add(std::string("mtp.0.") + n + ".weight", quant::Type::Q8_0, {D, D}, std::move(q));
  }
  std::uniform_real_distribution<float> scale(0.5f, 1.5f);  // distinct norms: a mix-up shows
  for (const char* n : {"enorm", "hnorm", "norm"}) {
    std::vector<float> v(D);
    for (float& x : v) x = scale(rng);
    add(std::string("mtp.0.") + n + ".weight", quant::Type::F32, {D}, floats(v));
  }
  w.write(out.string());
}

// Whether a and b hold the same floats bit for bit (and are not empty: a drafter that drafted
// nothing has no logits to agree on).
inline bool same_bits(std::span<const float> a, std::span<const float> b) {
  return !a.empty() && a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// n random token ids of m's vocabulary, from `seed`.
inline std::vector<int32_t> random_tokens(const Model& m, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % m.info().n_vocab);
  return t;
}

// Two targets with their MTP drafters, c on the CPU and d on another backend (or placement),
// both prefilled with `prompt` and keeping the final states their drafters read.
struct DraftersSideBySide {
  DraftersSideBySide(std::shared_ptr<Model> cpu, std::shared_ptr<const MtpModel> mtp_cpu, std::shared_ptr<Model> dev,
                     std::shared_ptr<const MtpModel> mtp_dev, std::span<const int32_t> prompt)
      : tc(std::move(cpu), options(*mtp_cpu)), td(std::move(dev), options(*mtp_cpu)), dc(mtp_cpu), dd(mtp_dev) {
    tc.prefill(prompt);
    td.prefill(prompt);
  }
  static ContextOptions options(const MtpModel& m) {
    ContextOptions co;
    co.keep_hidden = m.hidden_reach();
    return co;
  }
  Context tc, td;
  MtpDrafter dc, dd;
};

}  // namespace ds4::test
