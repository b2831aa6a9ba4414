// Binding the DS4 catalogue to checkpoint tensors, with every check; see convert_plan.hpp.
#include "toolchain/convert/convert_plan.hpp"

#include <xxhash.h>

#include <algorithm>
#include <map>
#include <set>

#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/convert/official_layout.hpp"

namespace ds4::convert {

using quant::Type;

std::string_view source_kind_name(SourceKind k) {
  switch (k) {
    case SourceKind::Float: return "float";
    case SourceKind::Fp8: return "fp8_e4m3+e8m0/128x128";
    case SourceKind::Fp4Experts: return "fp4_e2m1+e8m0/32";
    case SourceKind::Ids: return "int ids";
  }
  return "?";
}

uint64_t TargetPlan::rows() const {
  uint64_t n = 1;
  for (size_t i = 1; i < rule.dims.size(); ++i) n *= rule.dims[i];
  return n;
}
uint64_t TargetPlan::out_bytes() const { return quant::row_bytes(type, ne0()) * rows(); }
uint64_t TargetPlan::source_bytes() const {
  uint64_t n = 0;
  for (const SourceTensor* t : weights) n += t->n_bytes;
  for (const SourceTensor* t : scales) n += t->n_bytes;
  return n;
}

namespace {

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

bool is_float(Dtype d) { return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16; }

struct Binder {
  const Checkpoint& ck;
  std::set<std::string> consumed;

  const SourceTensor* need(const std::string& name, const std::string& why) {
    const SourceTensor* t = ck.find(name);
    if (!t) throw ConvertError(ck.dir(), name, "missing tensor (needed for " + why + ")");
    if (!consumed.insert(name).second)
      throw ConvertError(ck.shard_path(*t), name, "would be consumed by two target tensors");
    return t;
  }
  [[noreturn]] void fail(const SourceTensor& t, const std::string& what) const {
    throw ConvertError(ck.shard_path(t), t.name, what);
  }
  void expect_shape(const SourceTensor& t, const std::vector<uint64_t>& want) const {
    if (t.shape != want)
      fail(t, "shape mismatch: has " + shape_str(t.shape) + ", config.json implies " + shape_str(want));
  }
  void expect_dtype(const SourceTensor& t, Dtype want, const char* what) const {
    if (t.dtype != want)
      fail(t, "wrong dtype " + std::string(dtype_name(t.dtype)) + ", expected " + std::string(dtype_name(want)) + " (" +
                  what + ")");
  }
};

TargetPlan bind_regular(Binder& b, const gguf::TensorRule& rule, Type type, const std::string& hf) {
  TargetPlan p;
  p.rule = rule;
  p.type = type;
  const SourceTensor* w = b.need(hf, rule.name);
  std::vector<uint64_t> want(rule.dims.rbegin(), rule.dims.rend());
  p.weights.push_back(w);
  if (type == Type::I32) {
    if (w->dtype != Dtype::I64 && w->dtype != Dtype::I32)
      b.fail(*w, "wrong dtype " + std::string(dtype_name(w->dtype)) + ", expected I64 or I32 (expert ids)");
    b.expect_shape(*w, want);
    p.kind = SourceKind::Ids;
    return p;
  }
  b.expect_shape(*w, want);
  if (w->dtype == Dtype::F8_E4M3) {
    if (want.size() != 2) b.fail(*w, "FP8 weights must be 2-D");
    const SourceTensor* s = b.need(scale_name_for(hf), rule.name + " (FP8 block scales)");
    b.expect_dtype(*s, Dtype::F8_E8M0, "FP8 block scales");
    b.expect_shape(*s, {(want[0] + 127) / 128, (want[1] + 127) / 128});
    p.scales.push_back(s);
    p.kind = SourceKind::Fp8;
  } else if (is_float(w->dtype)) {
    p.kind = SourceKind::Float;
  } else {
    b.fail(*w, "wrong dtype " + std::string(dtype_name(w->dtype)) + ", expected F32, F16, BF16 or F8_E4M3 (+ .scale)");
  }
  return p;
}

TargetPlan bind_experts(Binder& b, const gguf::TensorRule& rule, Type type, const ExpertName& en, uint32_t n_expert) {
  TargetPlan p;
  p.rule = rule;
  p.type = type;
  p.kind = SourceKind::Fp4Experts;
  const uint64_t in = rule.dims[0], out = rule.dims[1];
  if (in % 32 != 0)
    throw ConvertError(b.ck.dir(), rule.name,
                       "expert input width " + std::to_string(in) + " is not a multiple of 32 (FP4 blocks)");
  for (uint32_t e = 0; e < n_expert; ++e) {
    const std::string why = rule.name + " expert " + std::to_string(e);
    const SourceTensor* w = b.need(en.weight(e), why);
    b.expect_dtype(*w, Dtype::I8, "packed FP4 E2M1, two per byte");
    b.expect_shape(*w, {out, in / 2});
    const SourceTensor* s = b.need(en.scale(e), why + " (FP4 scales)");
    b.expect_dtype(*s, Dtype::F8_E8M0, "FP4 scales, one per 32 inputs");
    b.expect_shape(*s, {out, in / 32});
    p.weights.push_back(w);
    p.scales.push_back(s);
  }
  return p;
}

}  // namespace

ConvertPlan make_plan(const Checkpoint& ck, const OfficialConfig& cfg, const Recipe& recipe) {
  ConvertPlan plan;
  plan.config = cfg;
  const std::vector<gguf::TensorRule> catalogue = gguf::ds4_tensor_catalogue(cfg.dims);
  bool has_mtp = false;
  for (const SourceTensor* t : ck.tensors()) has_mtp |= t->name.rfind("mtp.", 0) == 0;
  const std::vector<gguf::TensorRule> mcat = has_mtp ? mtp_catalogue(cfg.dims) : std::vector<gguf::TensorRule>();
  std::vector<gguf::TensorRule> all = catalogue;
  all.insert(all.end(), mcat.begin(), mcat.end());
  const std::vector<std::string> bad = check_recipe(recipe, all);
  if (!bad.empty()) {
    std::string msg = "recipe '" + recipe.name + "' produces a file the engine cannot load (nothing was written):";
    for (const std::string& m : bad) msg += "\n  " + m;
    throw ConvertError(recipe.name, "", msg);
  }
  Binder b{ck, {}};
  for (const gguf::TensorRule& rule : catalogue) {
    const Type type = recipe.type_for(rule);
    if (auto en = official_expert_name(rule)) {
      plan.targets.push_back(bind_experts(b, rule, type, *en, cfg.dims.n_expert));
      continue;
    }
    const std::optional<std::string> hf = official_name(rule);
    if (!hf) throw ConvertError(ck.dir(), rule.name, "no official name known for this catalogue tensor");
    if (!rule.required && !ck.find(*hf)) continue;
    plan.targets.push_back(bind_regular(b, rule, type, *hf));
  }
  // MTP / drafter block: when the checkpoint has any mtp.* tensor, all of them are bound to the
  // sidecar catalogue (a partial MTP block is a missing-tensor error like any other).
  if (has_mtp) {
    for (const gguf::TensorRule& rule : mcat) {
      const Type type = recipe.type_for(rule);
      gguf::TensorRule as_layer = rule;
      as_layer.name = "blk.0." + rule.name.substr(6);
      as_layer.layer = 0;
      if (auto en = official_expert_name(as_layer)) {
        ExpertName m{"mtp.0.ffn.experts.", en->part};
        plan.mtp_targets.push_back(bind_experts(b, rule, type, m, cfg.dims.n_expert));
      } else {
        plan.mtp_targets.push_back(bind_regular(b, rule, type, mtp_official_name(rule)));
      }
    }
  }
  // Anything left lands nowhere: name it (e.g. expert tensors beyond n_routed_experts).
  for (const SourceTensor* t : ck.tensors()) {
    if (b.consumed.count(t->name)) continue;
    throw ConvertError(ck.shard_path(*t), t->name,
                       "not part of the DS4 Flash layout for this config.json: it lands in no target tensor and has no "
                       "reason to be skipped");
  }
  plan.source_fingerprint = fingerprint_checkpoint(ck, cfg);
  plan.source_tensors = ck.tensors().size();
  plan.consumed = b.consumed.size();
  return plan;
}

std::string fingerprint_checkpoint(const Checkpoint& ck, const OfficialConfig& cfg) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, cfg.config_json.data(), cfg.config_json.size());
  for (const SourceTensor* t : ck.tensors()) {
    XXH3_64bits_update(st, t->name.data(), t->name.size() + 1);
    const auto dn = dtype_name(t->dtype);
    XXH3_64bits_update(st, dn.data(), dn.size());
    XXH3_64bits_update(st, t->shape.data(), t->shape.size() * sizeof(uint64_t));
    const uint64_t k = std::min<uint64_t>(256, t->n_bytes);
    for (uint64_t at : {uint64_t{0}, (t->n_bytes - k) / 2, t->n_bytes - k}) XXH3_64bits_update(st, t->data + at, k);
  }
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ds4::convert
