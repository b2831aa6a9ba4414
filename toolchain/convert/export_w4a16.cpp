// W4A16 (compressed-tensors) export; see export_w4a16.hpp.
#include "toolchain/convert/export_w4a16.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "engine/quant/quant.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/official_formats.hpp"
#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert {

namespace fs = std::filesystem;
namespace json = boost::json;
using quant::Type;

float int4_group_quantize(const float* x, int n, int8_t* q) {
  float amax = 0;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (amax == 0) {
    std::memset(q, 0, size_t(n));
    return 0.0f;
  }
  float best_s = amax / 7, best_err = std::numeric_limits<float>::infinity();
  for (float r : {6.0f / 7.0f, 0.9f, 0.95f, 1.0f, 1.05f, 1.1f}) {
    // The scale is stored as BF16: search over the values that will be written.
    float s = r * amax / 7;
    uint16_t b;
    quant::traits(Type::BF16).quantize(&s, &b, 1);
    quant::traits(Type::BF16).dequantize(&b, &s, 1);
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float c = std::clamp(std::nearbyint(x[i] / s), -8.0f, 7.0f);
      err += (c * s - x[i]) * (c * s - x[i]);
    }
    if (err < best_err) best_err = err, best_s = s;
  }
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] / best_s), -8.0f, 7.0f));
  return best_s;
}

namespace {

bool has(const std::string& s, const char* x) { return s.find(x) != std::string::npos; }
bool ends(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// One output tensor: its header entry and a producer that writes its bytes.
struct Out {
  std::string name;
  Dtype dtype;
  std::vector<uint64_t> shape;
  uint64_t bytes;
  std::function<void(std::ostream&)> produce;
};

struct Snr {
  double sig = 0, noise = 0;
  double db() const { return noise > 0 ? 10 * std::log10(sig / noise) : std::numeric_limits<double>::infinity(); }
};

std::vector<float> decode_all(const SourceTensor& w, const SourceTensor* scale) {
  const uint64_t in = w.shape.size() == 2 ? w.shape[1] : w.n_elements();
  std::vector<float> f(w.n_elements());
  const auto* b = reinterpret_cast<const uint8_t*>(w.data);
  if (w.dtype == Dtype::F8_E4M3)
    decode_fp8_rows(b, reinterpret_cast<const uint8_t*>(scale->data), in, 0, w.shape[0], f.data());
  else if (w.dtype == Dtype::F32) std::memcpy(f.data(), w.data, w.n_bytes);
  else quant::traits(w.dtype == Dtype::F16 ? Type::F16 : Type::BF16).dequantize(w.data, f.data(), int64_t(f.size()));
  return f;
}

}  // namespace

W4a16Result export_w4a16(const std::string& src_dir, const std::string& out_dir, const W4a16Options& opt) {
  const Checkpoint ck = Checkpoint::open(src_dir);
  fs::create_directories(out_dir);
  W4a16Result res;
  std::vector<Out> outs;
  res.tensors.reserve(ck.tensors().size());
  auto note = [&](const std::string& name, const char* kind, uint64_t bytes) {
    res.tensors.push_back({name, kind, std::numeric_limits<double>::infinity(), bytes});
    return &res.tensors.back();
  };
  Snr experts;
  for (const SourceTensor* t : ck.tensors()) {
    const std::string& n = t->name;
    if (t->dtype == Dtype::F8_E8M0) continue;  // scales travel with their weights
    const SourceTensor* scale = ck.find(n.substr(0, n.size() - std::string(".weight").size()) + ".scale");
    const std::string base = ends(n, ".weight") ? n.substr(0, n.size() - 7) : n;
    if (has(n, ".ffn.experts.") && t->dtype == Dtype::I8) {
      if (!scale) throw ConvertError(ck.shard_path(*t), n, "FP4 expert weight without .scale");
      const uint64_t out = t->shape[0], in = t->shape[1] * 2;
      W4a16Tensor* a = note(base + ".weight_packed", "int4_group32", out * in / 2 + out * in / 32 * 2 + 16);
      auto work = std::make_shared<std::pair<std::vector<int32_t>, std::vector<uint16_t>>>();
      auto compute = [t, scale, out, in, work, a, &experts] {
        if (!work->first.empty()) return;
        std::vector<float> f(out * in);
        decode_fp4_rows(reinterpret_cast<const uint8_t*>(t->data), reinterpret_cast<const uint8_t*>(scale->data), in, 0,
                        out, f.data());
        work->first.assign(out * in / 8, 0);
        work->second.resize(out * in / 32);
        Snr s;
        int8_t q[32];
        for (uint64_t g = 0; g < out * in / 32; ++g) {
          const float* x = f.data() + g * 32;
          float sc = int4_group_quantize(x, 32, q);
          quant::traits(Type::BF16).quantize(&sc, &work->second[g], 1);
          for (int j = 0; j < 32; ++j) {
            const double e = double(q[j]) * sc - x[j];
            s.sig += double(x[j]) * x[j], s.noise += e * e;
            work->first[(g * 32 + j) / 8] |= int32_t(uint32_t(q[j] + 8) << (4 * ((g * 32 + j) % 8)));
          }
        }
        a->snr_db = s.db();
        experts.sig += s.sig, experts.noise += s.noise;
      };
      outs.push_back(
          {base + ".weight_packed", Dtype::I32, {out, in / 8}, out * in / 2, [compute, work](std::ostream& o) {
             compute();
             o.write(reinterpret_cast<const char*>(work->first.data()), std::streamsize(work->first.size() * 4));
             work->first.shrink_to_fit();
           }});
      outs.push_back(
          {base + ".weight_scale", Dtype::BF16, {out, in / 32}, out * in / 32 * 2, [compute, work](std::ostream& o) {
             compute();
             o.write(reinterpret_cast<const char*>(work->second.data()), std::streamsize(work->second.size() * 2));
             *work = {};
           }});
      outs.push_back({base + ".weight_shape", Dtype::I64, {2}, 16, [out, in](std::ostream& o) {
                        const int64_t s[2] = {int64_t(out), int64_t(in)};
                        o.write(reinterpret_cast<const char*>(s), 16);
                      }});
      continue;
    }
    const bool fp8 = t->dtype == Dtype::F8_E4M3;
    const bool to_bf16 = fp8 && (has(n, ".shared_experts.") || has(n, ".compressor.") || has(n, ".indexer."));
    if (fp8 && !scale) throw ConvertError(ck.shard_path(*t), n, "FP8 weight without .scale");
    if (to_bf16) {
      W4a16Tensor* a = note(n, "bf16", t->n_elements() * 2);
      outs.push_back({n, Dtype::BF16, t->shape, t->n_elements() * 2, [t, scale, a](std::ostream& o) {
                        const std::vector<float> f = decode_all(*t, scale);
                        std::vector<uint16_t> b(f.size());
                        quant::traits(Type::BF16).quantize(f.data(), b.data(), int64_t(f.size()));
                        std::vector<float> back(f.size());
                        quant::traits(Type::BF16).dequantize(b.data(), back.data(), int64_t(f.size()));
                        Snr s;
                        for (size_t i = 0; i < f.size(); ++i)
                          s.sig += double(f[i]) * f[i], s.noise += double(back[i] - f[i]) * (back[i] - f[i]);
                        a->snr_db = s.db();
                        o.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size() * 2));
                      }});
    } else if (fp8) {
      note(n, "fp8_block", t->n_bytes + scale->n_elements() * 4);
      outs.push_back({n, Dtype::F8_E4M3, t->shape, t->n_bytes, [t](std::ostream& o) {
                        o.write(reinterpret_cast<const char*>(t->data), std::streamsize(t->n_bytes));
                      }});
      outs.push_back(
          {base + ".weight_scale", Dtype::F32, scale->shape, scale->n_elements() * 4, [scale](std::ostream& o) {
             std::vector<float> f(scale->n_elements());
             for (size_t i = 0; i < f.size(); ++i) f[i] = e8m0_value(uint8_t(scale->data[i]));
             o.write(reinterpret_cast<const char*>(f.data()), std::streamsize(f.size() * 4));
           }});
    } else {
      note(n, "copy", t->n_bytes);
      outs.push_back({n, t->dtype, t->shape, t->n_bytes, [t](std::ostream& o) {
                        o.write(reinterpret_cast<const char*>(t->data), std::streamsize(t->n_bytes));
                      }});
    }
  }

  // Shards: consecutive tensors up to max_shard_bytes each; headers from the known sizes.
  std::vector<std::vector<const Out*>> shards(1);
  uint64_t acc = 0;
  for (const Out& o : outs) {
    if (acc > 0 && acc + o.bytes > opt.max_shard_bytes) shards.emplace_back(), acc = 0;
    shards.back().push_back(&o);
    acc += o.bytes;
  }
  json::object wm;
  for (size_t si = 0; si < shards.size(); ++si) {
    char fname[64];
    std::snprintf(fname, sizeof fname, "model-%05zu-of-%05zu.safetensors", si + 1, shards.size());
    json::object hdr;
    uint64_t off = 0;
    for (const Out* o : shards[si]) {
      json::array shape;
      for (uint64_t d : o->shape) shape.push_back(d);
      hdr[o->name] = json::object{{"dtype", std::string(dtype_name(o->dtype))},
                                  {"shape", shape},
                                  {"data_offsets", json::array{off, off + o->bytes}}};
      off += o->bytes;
      wm[o->name] = fname;
    }
    hdr["__metadata__"] = json::object{{"format", "pt"}};
    std::string h = json::serialize(hdr);
    while (h.size() % 8) h.push_back(' ');
    const fs::path p = fs::path(out_dir) / fname;
    std::ofstream f(p.string() + ".tmp", std::ios::binary);
    const uint64_t hl = h.size();
    f.write(reinterpret_cast<const char*>(&hl), 8);
    f.write(h.data(), std::streamsize(h.size()));
    for (const Out* o : shards[si]) {
      const auto before = f.tellp();
      o->produce(f);
      if (uint64_t(f.tellp() - before) != o->bytes) throw std::logic_error("w4a16: size mismatch for " + o->name);
    }
    f.close();
    if (!f) throw ConvertError(p.string(), "", "write failed");
    fs::rename(p.string() + ".tmp", p);
    res.bytes += off;
  }
  res.shards = shards.size();
  std::ofstream(fs::path(out_dir) / "model.safetensors.index.json")
      << json::serialize(json::object{{"metadata", json::object{{"total_size", res.bytes}}}, {"weight_map", wm}})
      << "\n";

  // config.json + quantization_config; tokenizer.json as is.
  std::ifstream cin(fs::path(src_dir) / "config.json");
  std::stringstream ss;
  ss << cin.rdbuf();
  json::value cfg = json::parse(ss.str());
  cfg.as_object()["quantization_config"] = json::object{
      {"quant_method", "compressed-tensors"},
      {"format", "mixed"},
      {"config_groups",
       json::object{
           {"routed_experts", json::object{{"targets", json::array{"re:.*ffn\\.experts\\.\\d+\\.w[123]$"}},
                                           {"format", "pack-quantized"},
                                           {"weights", json::object{{"num_bits", 4},
                                                                    {"type", "int"},
                                                                    {"symmetric", true},
                                                                    {"strategy", "group"},
                                                                    {"group_size", 32}}},
                                           {"input_activations", nullptr}}},
           {"attention_fp8", json::object{{"targets", json::array{"re:.*attn\\.(wq_a|wq_b|wkv|wo_a|wo_b)$"}},
                                          {"format", "float-quantized"},
                                          {"weights", json::object{{"num_bits", 8},
                                                                   {"type", "float"},
                                                                   {"symmetric", true},
                                                                   {"strategy", "block"},
                                                                   {"block_structure", json::array{128, 128}}}},
                                          {"input_activations", nullptr}}}}},
      {"ignore",
       json::array{"head", "re:.*shared_experts.*", "re:.*compressor.*", "re:.*indexer.*", "re:.*ffn\\.gate$"}}};
  std::ofstream(fs::path(out_dir) / "config.json") << json::serialize(cfg) << "\n";
  if (fs::exists(fs::path(src_dir) / "tokenizer.json"))
    fs::copy_file(fs::path(src_dir) / "tokenizer.json", fs::path(out_dir) / "tokenizer.json",
                  fs::copy_options::overwrite_existing);
  res.expert_snr_db = experts.db();

  // Audit: SNR per tensor.
  json::array ta;
  std::string txt = "ds4ctl export-w4a16 audit (SNR of the written values against the exact source)\n";
  for (const W4a16Tensor& t : res.tensors) {
    ta.push_back(json::object{{"name", t.name},
                              {"kind", t.kind},
                              {"snr_db", std::isinf(t.snr_db) ? json::value(nullptr) : json::value(t.snr_db)},
                              {"bytes", t.bytes}});
    txt += t.name + "  " + t.kind + "  " +
           (std::isinf(t.snr_db) ? std::string("exact") : std::to_string(t.snr_db) + " dB") + "\n";
  }
  txt += "routed experts overall: " + std::to_string(res.expert_snr_db) + " dB\n";
  std::ofstream(fs::path(out_dir) / "w4a16.audit.json")
      << json::serialize(json::object{
             {"expert_snr_db", res.expert_snr_db}, {"shards", res.shards}, {"bytes", res.bytes}, {"tensors", ta}})
      << "\n";
  std::ofstream(fs::path(out_dir) / "w4a16.audit.txt") << txt;
  return res;
}

}  // namespace ds4::convert
