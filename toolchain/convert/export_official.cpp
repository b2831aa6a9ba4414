// GGUF -> official-format checkpoint (fixture generator); see export_official.hpp.
#include "toolchain/convert/export_official.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/convert/official_config.hpp"
#include "toolchain/convert/official_formats.hpp"
#include "toolchain/convert/official_layout.hpp"
#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert {

namespace fs = std::filesystem;
using quant::Type;

namespace {

std::vector<float> dequantize_all(const gguf::GgufFile& f, const gguf::TensorInfo& t) {
  std::vector<float> out(t.n_elements);
  const quant::Traits& tr = quant::traits(t.type);
  const uint64_t ne0 = t.dims[0], rb = t.row_bytes();
  for (uint64_t r = 0; r < t.rows(); ++r) tr.dequantize(f.data(t) + r * rb, out.data() + r * ne0, int64_t(ne0));
  return out;
}

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void add_fp8(std::vector<ShardEntry>& out, const std::string& name, const std::vector<float>& w, uint64_t rows,
             uint64_t cols) {
  std::vector<uint8_t> q(rows * cols), s(((rows + 127) / 128) * ((cols + 127) / 128));
  encode_fp8(w.data(), rows, cols, q.data(), s.data());
  out.push_back({name, Dtype::F8_E4M3, {rows, cols}, as_bytes(q)});
  out.push_back({scale_name_for(name), Dtype::F8_E8M0, {(rows + 127) / 128, (cols + 127) / 128}, as_bytes(s)});
}

}  // namespace

ExportOfficialSummary export_official(const std::string& gguf_path, const std::string& dir,
                                      const ExportOfficialOptions& opt) {
  const gguf::GgufFile f = gguf::GgufFile::open(gguf_path);
  const OfficialConfig cfg = config_from_gguf(f);
  const auto issues = gguf::check_ds4_layout(f);
  if (!issues.empty()) throw ConvertError(gguf_path, "", "not a valid DS4 GGUF: " + issues.front());
  fs::create_directories(dir);

  std::vector<ShardEntry> all;
  for (const gguf::TensorRule& rule : gguf::ds4_tensor_catalogue(cfg.dims)) {
    const gguf::TensorInfo* t = f.find_tensor(rule.name);
    if (!t) continue;  // optional tensor absent
    if (auto en = official_expert_name(rule)) {
      const uint64_t in = t->dims[0], out = t->dims[1];
      const bool mx = t->type == Type::MXFP4;  // already E2M1 + E8M0: repack without loss
      const std::vector<float> w = mx ? std::vector<float>() : dequantize_all(f, *t);
      for (uint32_t e = 0; e < t->dims[2]; ++e) {
        std::vector<uint8_t> q(out * in / 2), s(out * in / 32);
        if (mx) {
          const auto* src = reinterpret_cast<const uint8_t*>(f.data(*t)) + uint64_t(e) * out * t->row_bytes();
          for (uint64_t r = 0; r < out; ++r)
            repack_mxfp4_row_to_fp4(src + r * t->row_bytes(), in, q.data() + r * in / 2, s.data() + r * in / 32);
        } else {
          encode_fp4(w.data() + uint64_t(e) * out * in, out, in, q.data(), s.data());
        }
        all.push_back({en->weight(e), Dtype::I8, {out, in / 2}, as_bytes(q)});
        all.push_back({en->scale(e), Dtype::F8_E8M0, {out, in / 32}, as_bytes(s)});
      }
      continue;
    }
    const std::string hf = *official_name(rule);
    std::vector<uint64_t> shape(t->dims.rbegin(), t->dims.rend());
    if (t->type == Type::I32) {
      std::vector<int64_t> ids(t->n_elements);
      const auto* src = reinterpret_cast<const int32_t*>(f.data(*t));
      for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = src[i];
      all.push_back({hf, Dtype::I64, shape, as_bytes(ids)});
      continue;
    }
    const std::vector<float> w = dequantize_all(f, *t);
    if (rule.dims.size() == 2 &&
        (rule.family == gguf::Family::Attention || rule.family == gguf::Family::SharedExpert)) {
      add_fp8(all, hf, w, t->dims[1], t->dims[0]);
    } else if (rule.dims.size() == 1) {
      all.push_back({hf, Dtype::F32, shape, as_bytes(w)});
    } else if (t->type == Type::F16) {  // kept F16: exact (the release has BF16 here; both read the same way)
      all.push_back({hf, Dtype::F16, shape, std::vector<std::byte>(f.data(*t), f.data(*t) + t->n_bytes)});
    } else {
      std::vector<uint16_t> b(w.size());
      quant::traits(Type::BF16).quantize(w.data(), b.data(), int64_t(w.size()));
      all.push_back({hf, Dtype::BF16, shape, as_bytes(b)});
    }
  }

  if (opt.mtp) {
    for (const gguf::TensorRule& rule : mtp_catalogue(cfg.dims)) {
      uint64_t n = 1;
      for (uint64_t x : rule.dims) n *= x;
      std::mt19937_64 rng(opt.mtp_seed ^ std::hash<std::string>{}(rule.name));
      std::normal_distribution<float> nd(rule.dims.size() == 1 ? 1.0f : 0.0f,
                                         rule.dims.size() == 1 ? 0.1f : 1.0f / std::sqrt(float(rule.dims[0])));
      std::vector<float> w(n);
      for (float& x : w) x = nd(rng);
      gguf::TensorRule as_layer = rule;
      as_layer.name = "blk.0." + rule.name.substr(6);
      as_layer.layer = 0;
      std::vector<uint64_t> shape(rule.dims.rbegin(), rule.dims.rend());
      if (auto en = official_expert_name(as_layer)) {
        const uint64_t in = rule.dims[0], out = rule.dims[1];
        for (uint32_t e = 0; e < rule.dims[2]; ++e) {
          std::vector<uint8_t> q(out * in / 2), s(out * in / 32);
          encode_fp4(w.data() + uint64_t(e) * out * in, out, in, q.data(), s.data());
          all.push_back(
              {"mtp.0.ffn.experts." + std::to_string(e) + en->part + ".weight", Dtype::I8, {out, in / 2}, as_bytes(q)});
          all.push_back({"mtp.0.ffn.experts." + std::to_string(e) + en->part + ".scale",
                         Dtype::F8_E8M0,
                         {out, in / 32},
                         as_bytes(s)});
        }
      } else if (rule.dims.size() == 2 && rule.family == gguf::Family::Attention) {
        add_fp8(all, mtp_official_name(rule), w, rule.dims[1], rule.dims[0]);
      } else if (rule.dims.size() == 2 && rule.family == gguf::Family::SharedExpert) {
        add_fp8(all, mtp_official_name(rule), w, rule.dims[1], rule.dims[0]);
      } else if (rule.dims.size() == 1) {
        all.push_back({mtp_official_name(rule), Dtype::F32, shape, as_bytes(w)});
      } else {
        std::vector<uint16_t> b(w.size());
        quant::traits(Type::BF16).quantize(w.data(), b.data(), int64_t(w.size()));
        all.push_back({mtp_official_name(rule), Dtype::BF16, shape, as_bytes(b)});
      }
    }
  }

  ExportOfficialSummary sum;
  uint64_t total = 0;
  for (const ShardEntry& e : all) total += e.bytes.size();
  const unsigned n = std::max(1u, opt.shards);
  std::vector<std::vector<ShardEntry>> shards(n);
  uint64_t acc = 0;
  for (ShardEntry& e : all) {
    const size_t s = std::min<size_t>(n - 1, static_cast<size_t>(acc * n / std::max<uint64_t>(total, 1)));
    acc += e.bytes.size();
    shards[s].push_back(std::move(e));
  }
  boost::json::object wm;
  for (unsigned i = 0; i < n; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", i + 1, n);
    for (const ShardEntry& e : shards[i]) wm[e.name] = name;
    write_shard((fs::path(dir) / name).string(), shards[i]);
    sum.tensors += shards[i].size();
  }
  std::ofstream(fs::path(dir) / "model.safetensors.index.json")
      << boost::json::serialize(
             boost::json::object{{"metadata", boost::json::object{{"total_size", total}}}, {"weight_map", wm}})
      << "\n";
  write_official_config(dir, cfg);
  sum.shards = n;
  sum.bytes = total;
  return sum;
}

}  // namespace ds4::convert
