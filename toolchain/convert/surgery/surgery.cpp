// Structural surgery on an official-format checkpoint; see surgery.hpp and docs/surgery.md.
#include "toolchain/convert/surgery/surgery.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/safetensors.hpp"
#include "toolchain/convert/surgery/load_check.hpp"
#include "toolchain/convert/surgery/shard_stream.hpp"

namespace ds4::convert::surgery {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

json::object read_json_object(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw ConvertError(p.string(), "", "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    json::value v = json::parse(ss.str());
    if (!v.is_object()) throw ConvertError(p.string(), "", "not a JSON object");
    return std::move(v.as_object());
  } catch (const ConvertError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConvertError(p.string(), "", std::string("not valid JSON: ") + e.what());
  }
}

uint32_t u32(const json::object& c, const char* key, const std::string& path) {
  const json::value* v = c.if_contains(key);
  if (!v || !v->is_int64() || v->as_int64() < 0) throw ConvertError(path, "", std::string("needs integer ") + key);
  return uint32_t(v->as_int64());
}

// A tensor name taken apart: layer (or -1), and for experts the id, part (".w1") and suffix.
struct Name {
  int layer = -1;
  std::string rest;  // after "layers.N."
  int expert = -1;
  std::string part, suffix;
};

Name parse(const std::string& n) {
  Name r;
  if (n.rfind("layers.", 0) != 0) return r;
  const size_t dot = n.find('.', 7);
  if (dot == std::string::npos) return r;
  r.layer = std::stoi(n.substr(7, dot - 7));
  r.rest = n.substr(dot + 1);
  if (r.rest.rfind("ffn.experts.", 0) == 0) {
    const size_t b = 12, e = r.rest.find('.', b);
    r.expert = std::stoi(r.rest.substr(b, e - b));
    const size_t s = r.rest.find('.', e + 1);
    r.part = r.rest.substr(e, s - e);
    r.suffix = r.rest.substr(s);
  }
  return r;
}

// Copies the rows `keep` (each row_bytes long) of a tensor: structure, no arithmetic.
std::vector<std::byte> take_rows(const SourceTensor& t, const std::vector<uint32_t>& keep) {
  const uint64_t row_bytes = t.n_bytes / t.shape[0];
  std::vector<std::byte> out(keep.size() * row_bytes);
  for (size_t i = 0; i < keep.size(); ++i)
    std::memcpy(out.data() + i * row_bytes, t.data + keep[i] * row_bytes, row_bytes);
  return out;
}

struct LayerMap {
  uint32_t new_layer = 0;
  bool identity = true;             // all experts kept in order, nothing remapped: copy as is
  std::map<uint32_t, uint32_t> id;  // kept source expert -> new id
  const LayerPlan* plan = nullptr;
};

}  // namespace

SurgeryResult run_surgery(const SurgeryOptions& o) {
  SurgeryResult res;
  const Plan raw = read_plan(o.plan_path);
  const Checkpoint ck = Checkpoint::open(o.source_dir);
  const fs::path cfg_path = fs::path(o.source_dir) / "config.json";
  json::object cfg = read_json_object(cfg_path);
  const SourceShape shape{
      u32(cfg, "num_hidden_layers", cfg_path.string()), u32(cfg, "n_routed_experts", cfg_path.string()),
      u32(cfg, "num_hash_layers", cfg_path.string()), u32(cfg, "num_experts_per_tok", cfg_path.string())};
  res.plan = resolve_plan(raw, shape);
  const Plan& plan = res.plan;
  const uint32_t n_new = *plan.n_expert;
  if (n_new != shape.n_expert)
    for (const SourceTensor* t : ck.tensors())
      if (t->name.rfind("mtp.", 0) == 0 && t->name.find(".ffn.experts.") != std::string::npos)
        throw ConvertError(ck.shard_path(*t), t->name,
                           "the MTP block has routed experts too; a plan changing n_routed_experts cannot cut them "
                           "yet (remove the mtp.* tensors first or keep the count)");

  std::map<uint32_t, LayerMap> layers;
  uint32_t next = 0, hash_after = 0;
  for (uint32_t l = 0; l < shape.n_layer; ++l) {
    if (std::count(plan.drop_layers.begin(), plan.drop_layers.end(), l)) continue;
    LayerMap m;
    m.new_layer = next++;
    m.plan = &plan.layers.at(l);
    for (size_t i = 0; i < m.plan->keep.size(); ++i) m.id[m.plan->keep[i]] = uint32_t(i);
    m.identity = m.plan->keep.size() == shape.n_expert && m.plan->remap.empty();
    if (l < shape.n_hash_layer) ++hash_after;
    layers[l] = std::move(m);
  }
  // Merged experts, by "layer/expert/part": computed once, emitted where weight and scale sit.
  std::map<std::string, MergedPart> merged;
  auto merged_part = [&](uint32_t l, uint32_t survivor, const std::string& part) -> const MergedPart& {
    const std::string key = std::to_string(l) + "/" + std::to_string(survivor) + part;
    if (auto it = merged.find(key); it != merged.end()) return it->second;
    const LayerPlan& lp = *layers.at(l).plan;
    const auto& cluster = *std::find_if(lp.merge.begin(), lp.merge.end(), [&](auto& c) { return c[0] == survivor; });
    std::vector<const SourceTensor*> ws, ss;
    std::vector<double> w;
    for (uint32_t e : cluster) {
      const std::string b = "layers." + std::to_string(l) + ".ffn.experts." + std::to_string(e) + part;
      ws.push_back(ck.find(b + ".weight"));
      ss.push_back(ck.find(b + ".scale"));
      if (!ws.back()) throw ConvertError(o.source_dir, b + ".weight", "merge member missing");
      w.push_back(lp.merge_weights.empty() ? 1.0 : lp.merge_weights[e]);
    }
    MergeAudit a{l, survivor, part, cluster};
    MergedPart mp = merge_fp4_experts(ws, ss, w, a);
    res.merges.push_back(a);
    return merged.emplace(key, std::move(mp)).first->second;
  };
  auto is_survivor_of_merge = [](const LayerPlan& lp, uint32_t e) {
    return std::any_of(lp.merge.begin(), lp.merge.end(), [&](auto& c) { return c[0] == e && c.size() > 1; });
  };

  fs::create_directories(o.output_dir);
  std::vector<std::pair<std::string, std::vector<OutTensor>>> out_shards;
  for (size_t si = 0; si < ck.shards().size(); ++si) {
    if (o.shard && *o.shard != si + 1) continue;
    const Shard& sh = *ck.shards()[si];
    std::vector<const SourceTensor*> ts;
    for (const SourceTensor& t : sh.tensors()) ts.push_back(&t);
    std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->file_offset < b->file_offset; });
    std::vector<OutTensor> outs;
    for (const SourceTensor* t : ts) {
      ++res.tensors_in, res.bytes_in += t->n_bytes;
      const Name n = parse(t->name);
      OutTensor ot{t->name, t->dtype, t->shape, t->data, t->n_bytes, {}, t->name};
      if (n.layer >= 0) {
        auto lit = layers.find(uint32_t(n.layer));
        if (lit == layers.end()) {
          ++res.tensors_removed;
          continue;
        }
        const LayerMap& m = lit->second;
        const std::string prefix = "layers." + std::to_string(m.new_layer) + ".";
        ot.name = prefix + n.rest;
        if (!m.identity && n.expert >= 0) {
          auto id = m.id.find(uint32_t(n.expert));
          if (id == m.id.end()) {
            ++res.tensors_removed;
            continue;
          }
          ot.name = prefix + "ffn.experts." + std::to_string(id->second) + n.part + n.suffix;
          if (is_survivor_of_merge(*m.plan, uint32_t(n.expert))) {
            const MergedPart& mp = merged_part(uint32_t(n.layer), uint32_t(n.expert), n.part);
            ot.src = nullptr, ot.n_bytes = 0;
            ot.made = n.suffix == ".scale" ? mp.scale : mp.weight;
            ++res.tensors_edited;
          }
        } else if (!m.identity && (n.rest == "ffn.gate.weight" || n.rest == "ffn.gate.bias")) {
          if (t->dtype != Dtype::F32 && t->dtype != Dtype::F16 && t->dtype != Dtype::BF16)
            throw ConvertError(sh.path(), t->name,
                               "is " + std::string(dtype_name(t->dtype)) +
                                   ": removing rows of a block-scaled gate would re-encode its scales, "
                                   "which a surgery does not do (docs/surgery.md §structure-not-numbers)");
          if (t->shape.empty() || t->shape[0] != shape.n_expert)
            throw ConvertError(sh.path(), t->name, "rows differ from the source's n_routed_experts");
          ot.made = take_rows(*t, m.plan->keep);
          ot.src = nullptr, ot.n_bytes = 0;
          ot.shape[0] = n_new;
          ++res.tensors_edited;
        } else if (!m.identity && n.rest == "ffn.gate.tid2eid") {
          if (t->dtype != Dtype::I64 && t->dtype != Dtype::I32)
            throw ConvertError(sh.path(), t->name, "must be I64 or I32");
          const size_t w = dtype_size(t->dtype);
          ot.made.assign(t->data, t->data + t->n_bytes);
          for (uint64_t i = 0; i < t->n_elements(); ++i) {
            int64_t v = 0;
            if (w == 8) std::memcpy(&v, ot.made.data() + 8 * i, 8);
            else {
              int32_t v32;
              std::memcpy(&v32, ot.made.data() + 4 * i, 4);
              v = v32;
            }
            if (v < 0 || uint64_t(v) >= shape.n_expert)
              throw ConvertError(sh.path(), t->name, "expert id out of range");
            auto r = m.plan->remap.find(uint32_t(v));
            const int64_t nv = m.id.at(r == m.plan->remap.end() ? uint32_t(v) : r->second);
            if (w == 8) std::memcpy(ot.made.data() + 8 * i, &nv, 8);
            else {
              const int32_t n32 = int32_t(nv);
              std::memcpy(ot.made.data() + 4 * i, &n32, 4);
            }
          }
          ot.src = nullptr, ot.n_bytes = 0;
          ++res.tensors_edited;
        }
      }
      if (ot.src) res.copied[ot.name] = t->name;
      outs.push_back(std::move(ot));
    }
    if (!outs.empty()) out_shards.emplace_back(fs::path(sh.path()).filename().string(), std::move(outs));
  }

  json::object wm;
  uint64_t total = 0;
  for (size_t i = 0; i < out_shards.size(); ++i) {
    auto& [name, ts] = out_shards[i];
    if (!o.shard) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, out_shards.size());
      name = buf;
    }
    for (const OutTensor& t : ts) {
      wm[t.name] = name;
      total += t.src ? t.n_bytes : t.made.size();
      ++res.tensors_out;
    }
    const std::string path = (fs::path(o.output_dir) / name).string();
    write_stream_shard(path, ts);
    res.shards.push_back(path);
  }
  res.bytes_out = total;
  std::ofstream(fs::path(o.output_dir) / "model.safetensors.index.json")
      << json::serialize(json::object{{"metadata", json::object{{"total_size", total}}}, {"weight_map", wm}}) << "\n";

  cfg["n_routed_experts"] = n_new;
  if (cfg.contains("num_experts")) cfg["num_experts"] = n_new;
  cfg["num_hidden_layers"] = uint32_t(layers.size());
  cfg["num_hash_layers"] = hash_after;
  if (json::value* cr = cfg.if_contains("compress_ratios"); cr && cr->is_array()) {
    json::array kept;
    for (size_t l = 0; l < cr->as_array().size(); ++l)
      if (layers.count(uint32_t(l))) kept.push_back(cr->as_array()[l]);
    *cr = std::move(kept);
  }
  json::array dropped;
  for (uint32_t l : plan.drop_layers) dropped.push_back(l);
  cfg["ds4d_surgery"] = json::object{{"name", plan.name},
                                     {"source_layers", shape.n_layer},
                                     {"source_routed_experts", shape.n_expert},
                                     {"dropped_layers", std::move(dropped)},
                                     {"merged_clusters", res.merges.size()}};
  std::ofstream(fs::path(o.output_dir) / "config.json") << json::serialize(cfg) << "\n";
  for (const auto& e : fs::directory_iterator(o.source_dir)) {
    const std::string f = e.path().filename().string();
    if (!e.is_regular_file() || e.path().extension() == ".safetensors" || f == "config.json" ||
        f == "model.safetensors.index.json")
      continue;
    fs::copy_file(e.path(), fs::path(o.output_dir) / f, fs::copy_options::overwrite_existing);
  }
  check_loadable(o.output_dir, o.shard.has_value());
  return res;
}

}  // namespace ds4::convert::surgery
