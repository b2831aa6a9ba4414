// Presets, metadata and weight generation for the forge; see forge.hpp for the recipe.
#include "toolchain/forge/forge.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/gguf/ds4_metadata.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/forge/forge_random.hpp"
#include "toolchain/forge/forge_vocab.hpp"

namespace ds4::gguf::forge {
namespace {

using quant::Type;

std::vector<uint32_t> ds4_ratios(uint32_t n_layer) {
  // ds4's rule: layers 0-1 raw, then even layers ratio 4 and odd layers ratio 128.
  std::vector<uint32_t> r(n_layer);
  for (uint32_t i = 2; i < n_layer; ++i) r[i] = i % 2 == 0 ? 4 : 128;
  return r;
}

std::string_view local_name(std::string_view name) {
  if (name.substr(0, 4) == "blk." || name.substr(0, 4) == "mtp.") name = name.substr(name.find('.', 4) + 1);
  return name.substr(0, name.rfind('.'));
}

bool ends_with(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

// Draws one row of `n` floats for element row `row` of tensor `rule`.
class RowInit {
 public:
  RowInit(const TensorRule& rule, const Ds4Dims& d) : d_(d) {
    const std::string_view n = local_name(rule.name);
    const double fan_in = static_cast<double>(rule.dims[0]);
    std_ = 1.0 / std::sqrt(fan_in);
    if (n == "token_embd") std_ = 0.5;
    else if (n == "output") std_ = 3.0 / std::sqrt(fan_in);
    else if (n == "ffn_gate_inp") std_ = 2.0 / std::sqrt(fan_in);
    else if (n == "attn_kv_a_norm") mean_ = 1.5, std_ = 0.15;
    else if (ends_with(n, "_norm") || n == "enorm" || n == "hnorm" || n == "norm") mean_ = 1.0, std_ = 0.1;
    else if (n == "attn_sinks") mean_ = 1.0, std_ = 1.0;
    else if (ends_with(n, "_scale")) uniform_ = true;
    else if (n == "output_hc_base" || n == "hc_head_base") std_ = 0.5;
    else if (ends_with(n, "_base")) hc_base_ = true;
    else if (ends_with(n, "_ape")) std_ = 0.5;
    else if (n == "exp_probs_b") std_ = 0.1;
  }

  void fill(Rng& rng, float* out, uint64_t n) const {
    for (uint64_t i = 0; i < n; ++i) {
      if (uniform_) out[i] = static_cast<float>(rng.uniform(0.3, 1.0));
      else if (hc_base_) out[i] = static_cast<float>(rng.normal(0.0, i < 2ull * d_.hc_count ? 0.5 : 1.0));
      else out[i] = static_cast<float>(rng.normal(mean_, std_));
    }
  }

 private:
  const Ds4Dims& d_;
  double mean_ = 0.0, std_ = 1.0;
  bool uniform_ = false, hc_base_ = false;
};

void encode_row(Type type, const float* src, std::byte* dst, uint64_t n) {
  if (type == Type::F32) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  quant::traits(type).quantize(src, dst, static_cast<int64_t>(n));
}

// Fills a whole tensor. Rows come from one stream per tensor, in row order.
void generate(const TensorRule& rule, Type type, const ForgePreset& p, uint64_t seed, std::span<std::byte> dst) {
  const Ds4Dims& d = p.dims;
  Rng rng(stream_seed(seed, rule.name));
  const uint64_t ne0 = rule.dims[0];
  const uint64_t row_bytes = quant::row_bytes(type, ne0);
  const uint64_t rows = dst.size() / row_bytes;

  if (type == Type::I32) {  // tid2eid: n_expert_used distinct experts per token
    std::vector<int32_t> perm(d.n_expert);
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t e = 0; e < d.n_expert; ++e) perm[e] = static_cast<int32_t>(e);
      for (uint64_t k = 0; k < ne0; ++k) std::swap(perm[k], perm[k + rng.below(d.n_expert - k)]);
      std::memcpy(dst.data() + r * row_bytes, perm.data(), row_bytes);
    }
    return;
  }

  RowInit init(rule, d);
  std::vector<float> row(ne0);
  const bool pooled = rule.family == Family::RoutedExperts && p.expert_pool_rows > 0 && rows > p.expert_pool_rows;
  const uint64_t produced = pooled ? p.expert_pool_rows : rows;
  for (uint64_t r = 0; r < produced; ++r) {
    init.fill(rng, row.data(), ne0);
    encode_row(type, row.data(), dst.data() + r * row_bytes, ne0);
  }
  if (pooled) {
    const uint64_t P = p.expert_pool_rows;
    for (uint64_t r = P; r < rows; ++r)
      std::memcpy(dst.data() + r * row_bytes, dst.data() + ((r + 131 * (r / P)) % P) * row_bytes, row_bytes);
  }
}

void set_metadata(GgufWriter& w, const ForgePreset& p, uint64_t seed) {
  Ds4HyperParams hp;  // DeepSeek V4 Flash's values
  hp.context_length = p.context_length;
  set_ds4_model_metadata(w, p.dims, hp, "ds4-forged-" + p.name + "-seed" + std::to_string(seed));
  set_ds4_tokenizer_metadata(w, build_forge_vocab(p.dims.n_vocab));
}

Ds4Dims base_dims() {
  Ds4Dims d;
  d.n_head_kv = 1;
  d.head_dim = d.value_dim = 512;
  d.rope_dim = 64;
  d.n_expert_used = 6;
  d.n_expert_shared = 1;
  d.n_hash_layer = 3;
  d.sliding_window = 128;
  d.indexer_dim = 128;
  d.hc_count = 4;
  d.hc_sinkhorn_iters = 20;
  return d;
}

}  // namespace

std::vector<std::string> forge_preset_names() { return {"tiny", "bench"}; }

ForgePreset forge_preset(std::string_view name) {
  ForgePreset p;
  p.name = std::string(name);
  Ds4Dims& d = p.dims;
  d = base_dims();
  if (name == "tiny") {
    d.n_layer = 6, d.n_embd = 256, d.n_vocab = 1024, d.n_head = 4;
    d.q_lora_rank = 128, d.out_lora_rank = 128, d.out_groups = 2;
    d.n_expert = 16, d.expert_ff = 256;
    d.indexer_heads = 4, d.indexer_top_k = 8;
    p.expert_pool_rows = 32;
  } else if (name == "bench") {
    d.n_layer = 10, d.n_embd = 2048, d.n_vocab = 2048, d.n_head = 16;
    d.q_lora_rank = 512, d.out_lora_rank = 512, d.out_groups = 4;
    d.n_expert = 32, d.expert_ff = 1536;
    d.indexer_heads = 8, d.indexer_top_k = 64;
    p.expert_pool_rows = 16;
  } else {
    throw std::invalid_argument("unknown forge preset '" + std::string(name) + "' (known: tiny, bench)");
  }
  d.compress_ratios = ds4_ratios(d.n_layer);
  return p;
}

namespace {

// Adds every tensor of `catalogue` to `w` by the q2 recipe; `s` receives the sizes.
void add_tensors(GgufWriter& w, std::vector<TensorRule> catalogue, const ForgePreset& preset, uint64_t seed,
                 ForgeSummary& s) {
  auto rules = std::make_shared<std::vector<TensorRule>>(std::move(catalogue));
  auto p = std::make_shared<ForgePreset>(preset);
  for (const TensorRule& rule : *rules) {
    const Type type = rule.allowed.front();  // the q2 recipe
    uint64_t n = 1;
    for (uint64_t x : rule.dims) n *= x;
    const uint64_t bytes = quant::row_bytes(type, rule.dims[0]) * (n / rule.dims[0]);
    s.weight_bytes += bytes;
    s.decode_bytes_per_token += decode_bytes_per_token(rule, bytes, preset.dims);
    const TensorRule* r = &rule;
    w.add_tensor(rule.name, type, rule.dims,
                 [rules, p, r, type, seed](std::span<std::byte> dst) { generate(*r, type, *p, seed, dst); });
  }
  s.n_tensors = rules->size();
  s.file_bytes = w.file_size();
}

}  // namespace

GgufWriter forge_writer(const ForgePreset& preset, uint64_t seed, ForgeSummary* summary) {
  GgufWriter w;
  set_metadata(w, preset, seed);
  ForgeSummary s;
  add_tensors(w, ds4_tensor_catalogue(preset.dims), preset, seed, s);
  if (summary) *summary = s;
  return w;
}

GgufWriter forge_drafter_writer(const ForgePreset& preset, uint64_t seed, const std::string& base_digest,
                                ForgeSummary* summary) {
  GgufWriter w;
  Ds4HyperParams hp;
  hp.context_length = preset.context_length;
  set_ds4_model_metadata(w, preset.dims, hp, "ds4-forged-" + preset.name + "-seed" + std::to_string(seed) + "-mtp");
  w.set("ds4d.convert.role", std::string("mtp"));
  w.set(kMtpBaseDigestKey, base_digest);
  ForgeSummary s;
  add_tensors(w, convert::mtp_catalogue(preset.dims), preset, seed, s);
  if (summary) *summary = s;
  return w;
}

ForgeSummary forge_model(const ForgePreset& preset, uint64_t seed, const std::string& path) {
  ForgeSummary s;
  GgufWriter w = forge_writer(preset, seed, &s);
  w.write(path);
  return s;
}

ForgeSummary forge_drafter(const ForgePreset& preset, uint64_t seed, const std::string& main_path,
                           const std::string& path) {
  ForgeSummary s;
  GgufWriter w = forge_drafter_writer(preset, seed, mtp_base_digest(GgufFile::open(main_path)), &s);
  w.write(path);
  return s;
}

}  // namespace ds4::gguf::forge
