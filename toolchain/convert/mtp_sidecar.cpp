// MTP sidecar catalogue, names and binding check; see mtp_sidecar.hpp.
#include "toolchain/convert/mtp_sidecar.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/official_layout.hpp"

namespace ds4::convert {

using gguf::Family;
using quant::Type;

std::vector<gguf::TensorRule> mtp_catalogue(const gguf::Ds4Dims& d) {
  // The block is a ratio-0 layer (no compressor, indexer or tid2eid); take those rules from the
  // main catalogue of layer 0 and rename them.
  gguf::Ds4Dims one = d;
  one.n_layer = 1;
  one.compress_ratios = {0};
  one.n_hash_layer = 0;
  std::vector<gguf::TensorRule> out;
  const int L = static_cast<int>(d.n_layer);
  const uint64_t E = d.n_embd;
  auto add = [&](std::string name, Family fam, std::vector<Type> types, std::vector<uint64_t> dims) {
    out.push_back({"mtp.0." + std::move(name), fam, std::move(types), std::move(dims), true, L});
  };
  add("hc_head_base.weight", Family::HyperConnection, {Type::F32}, {d.hc_count});
  add("hc_head_fn.weight", Family::HyperConnection, {Type::F16, Type::F32}, {d.hc_dim(), d.hc_count});
  add("hc_head_scale.weight", Family::HyperConnection, {Type::F32}, {1});
  add("e_proj.weight", Family::Attention, {Type::Q8_0}, {E, E});
  add("h_proj.weight", Family::Attention, {Type::Q8_0}, {E, E});
  add("enorm.weight", Family::Norms, {Type::F32}, {E});
  add("hnorm.weight", Family::Norms, {Type::F32}, {E});
  add("norm.weight", Family::Norms, {Type::F32}, {E});
  for (gguf::TensorRule r : gguf::ds4_tensor_catalogue(one)) {
    if (r.layer != 0) continue;
    r.name = "mtp.0." + r.name.substr(std::string("blk.0.").size());
    r.layer = L;
    r.required = true;  // exp_probs_b is required here
    out.push_back(std::move(r));
  }
  return out;
}

std::string mtp_official_name(const gguf::TensorRule& rule) {
  const std::string local = rule.name.substr(std::string("mtp.0.").size());
  for (const char* own : {"e_proj.weight", "h_proj.weight", "enorm.weight", "hnorm.weight", "norm.weight"})
    if (local == own) return rule.name;
  if (local.rfind("hc_head_", 0) == 0) return "mtp.0." + local.substr(0, local.size() - std::string(".weight").size());
  // A block tensor: map as layer 0 and swap the prefix.
  gguf::TensorRule as_layer = rule;
  as_layer.name = "blk.0." + local;
  as_layer.layer = 0;
  const std::optional<std::string> hf = official_name(as_layer);
  if (!hf) throw ConvertError("", rule.name, "no official name for this MTP tensor");
  return "mtp.0." + hf->substr(std::string("layers.0.").size());
}

std::string sidecar_path_for(const std::string& output) {
  const std::string ext = ".gguf";
  const bool has = output.size() > ext.size() && output.compare(output.size() - ext.size(), ext.size(), ext) == 0;
  return (has ? output.substr(0, output.size() - ext.size()) : output) + ".mtp.gguf";
}

void verify_sidecar(const std::string& main_gguf, const std::string& sidecar_gguf) {
  try {
    gguf::check_sidecar_binding(main_gguf, sidecar_gguf);
  } catch (const gguf::GgufError& e) {
    throw ConvertError(e.path(), "", e.detail());
  }
}

bool is_mtp_sidecar(const gguf::GgufFile& f) {
  if (f.get_or<std::string>("ds4d.convert.role", "") == "mtp") return true;
  return std::any_of(f.tensors().begin(), f.tensors().end(),
                     [](const gguf::TensorInfo& t) { return t.name.rfind("mtp.0.", 0) == 0; });
}

std::vector<std::string> check_mtp_layout(const gguf::GgufFile& f) {
  std::vector<std::string> issues;
  gguf::Ds4Dims d;
  try {
    d = gguf::Ds4Dims::from_metadata(f);
  } catch (const gguf::GgufError& e) {
    return {e.detail()};
  }
  auto type_name = [](Type t) { return std::string(quant::type_info(t).name); };
  std::set<std::string> expected;
  std::map<std::string, Type> found;
  for (const gguf::TensorRule& r : mtp_catalogue(d)) {
    expected.insert(r.name);
    const gguf::TensorInfo* t = f.find_tensor(r.name);
    if (!t) {
      issues.push_back("missing tensor '" + r.name + "'");
      continue;
    }
    found[r.name] = t->type;
    if (t->dims != r.dims) issues.push_back("tensor '" + r.name + "' has the wrong shape for this file's metadata");
    if (std::find(r.allowed.begin(), r.allowed.end(), t->type) == r.allowed.end()) {
      std::string allowed;
      for (Type a : r.allowed) {
        if (!allowed.empty()) allowed += '|';
        allowed += type_name(a);
      }
      issues.push_back("tensor '" + r.name + "' has type " + type_name(t->type) + ", the engine accepts " + allowed);
    }
  }
  const std::string g = "mtp.0.ffn_gate_exps.weight", u = "mtp.0.ffn_up_exps.weight";
  if (found.count(g) && found.count(u) && found[g] != found[u])
    issues.push_back("tensor '" + u + "' has type " + type_name(found[u]) + " but the gate experts are " +
                     type_name(found[g]) + " (gate and up must match)");
  for (const gguf::TensorInfo& t : f.tensors())
    if (!expected.count(t.name)) issues.push_back("unexpected tensor '" + t.name + "' (not part of the MTP block)");
  return issues;
}

void check_same_dims(const gguf::GgufFile& sidecar, const gguf::GgufFile& base) {
  for (const gguf::KeyValue& kv : sidecar.metadata()) {
    if (kv.key.rfind("deepseek4.", 0) != 0) continue;
    const gguf::KeyValue* b = nullptr;
    for (const gguf::KeyValue& x : base.metadata())
      if (x.key == kv.key) b = &x;
    if (!b)
      throw ConvertError(sidecar.path(), "", "metadata key '" + kv.key + "' is missing from the base " + base.path());
    if (!(b->value == kv.value))
      throw ConvertError(sidecar.path(), "",
                         "metadata key '" + kv.key + "' differs from the base " + base.path() +
                             " (a drafter is made for one model's dims)");
  }
}

}  // namespace ds4::convert
