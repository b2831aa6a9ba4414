// Surgery plans: parsing and resolution against a source; see surgery_plan.hpp.
#include "toolchain/convert/surgery/surgery_plan.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert::surgery {
namespace {

// Keys that would ask for new numbers in a weight: refused by name so the message says why
// (docs/surgery.md §structure-not-numbers), not just "unknown key".
constexpr const char* kArithmeticKeys[] = {"scale",   "requantize", "dtype",      "quantize", "interpolate",
                                           "average", "mix",        "prune_rows", "rank",     "svd"};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw ConvertError(path, "", what); }

uint32_t as_id(const toml::node& n, const std::string& path, const std::string& key) {
  const auto v = n.value<int64_t>();
  if (!v || *v < 0 || *v > int64_t(UINT32_MAX)) fail(path, key + ": entries must be non-negative integers");
  return uint32_t(*v);
}

std::vector<uint32_t> id_list(const toml::node* n, const std::string& path, const std::string& key) {
  std::vector<uint32_t> out;
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) fail(path, key + " must be an array of integers");
  for (const toml::node& x : *a) out.push_back(as_id(x, path, key));
  std::set<uint32_t> seen(out.begin(), out.end());
  if (seen.size() != out.size()) fail(path, key + " names an id twice");
  return out;
}

void refuse_arithmetic(const toml::table& t, const std::string& path, const std::string& where) {
  for (const char* k : kArithmeticKeys)
    if (t.contains(k))
      fail(path, where + "'" + k +
                     "' needs arithmetic on quantized weights; a surgery plan only deletes tensors, rows and "
                     "experts (the one exception is merge in a hash layer: docs/surgery.md §structure-not-numbers)");
}

}  // namespace

Plan read_plan(const std::string& path) {
  toml::table tbl;
  try {
    tbl = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail(path, std::string("not valid TOML: ") + std::string(e.description()));
  }
  Plan p;
  p.path = path;
  refuse_arithmetic(tbl, path, "");
  for (const auto& [k, v] : tbl) {
    const std::string key(k.str());
    if (key != "name" && key != "n_routed_experts" && key != "drop_layers" && key != "layer")
      fail(path, "unknown key '" + key + "' (known: name, n_routed_experts, drop_layers, [layer.N])");
  }
  const auto name = tbl["name"].value<std::string>();
  if (!name || name->empty()) fail(path, "needs name = \"...\": the result is a different model and is labelled");
  p.name = *name;
  if (const toml::node* n = tbl.get("n_routed_experts")) {
    const uint32_t e = as_id(*n, path, "n_routed_experts");
    if (e == 0) fail(path, "n_routed_experts must be at least 1");
    p.n_expert = e;
  }
  p.drop_layers = id_list(tbl.get("drop_layers"), path, "drop_layers");
  if (const toml::node* ln = tbl.get("layer")) {
    const toml::table* layers = ln->as_table();
    if (!layers) fail(path, "layer must be a table of [layer.N] sections");
    for (const auto& [k, v] : *layers) {
      const std::string lk(k.str()), where = "[layer." + lk + "] ";
      if (lk.empty() || lk.find_first_not_of("0123456789") != std::string::npos)
        fail(path, "layer key '" + lk + "' is not a layer number");
      const toml::table* t = v.as_table();
      if (!t) fail(path, where + "must be a table");
      refuse_arithmetic(*t, path, where);
      LayerPlan lp;
      for (const auto& [fk, fv] : *t) {
        const std::string f(fk.str());
        if (f != "keep" && f != "drop" && f != "remap" && f != "merge" && f != "merge_weights")
          fail(path, where + "unknown key '" + f + "' (known: keep, drop, remap, merge, merge_weights)");
      }
      if (t->contains("keep") && t->contains("drop")) fail(path, where + "has both keep and drop");
      lp.keep = id_list(t->get("keep"), path, where + "keep");
      lp.drop = id_list(t->get("drop"), path, where + "drop");
      if (const toml::node* r = t->get("remap")) {
        if (const auto s = r->value<std::string>()) {
          if (*s != "naive") fail(path, where + "remap must be \"naive\" or a table of removed = kept");
        } else if (const toml::table* rt = r->as_table()) {
          for (const auto& [rk, rv] : *rt) {
            const std::string from(rk.str());
            if (from.empty() || from.find_first_not_of("0123456789") != std::string::npos)
              fail(path, where + "remap key '" + from + "' is not an expert id");
            lp.remap[uint32_t(std::stoul(from))] = as_id(rv, path, where + "remap");
          }
        } else {
          fail(path, where + "remap must be \"naive\" or a table");
        }
      }
      if (const toml::node* m = t->get("merge")) {
        const toml::array* a = m->as_array();
        if (!a) fail(path, where + "merge must be an array of arrays of expert ids");
        for (const toml::node& c : *a) lp.merge.push_back(id_list(&c, path, where + "merge"));
      }
      if (const toml::node* w = t->get("merge_weights")) {
        const toml::array* a = w->as_array();
        if (!a) fail(path, where + "merge_weights must be an array of numbers");
        for (const toml::node& x : *a) {
          const auto d = x.value<double>();
          if (!d || *d < 0) fail(path, where + "merge_weights entries must be non-negative numbers");
          lp.merge_weights.push_back(*d);
        }
      }
      p.layers[uint32_t(std::stoul(lk))] = std::move(lp);
    }
  }
  return p;
}

Plan resolve_plan(const Plan& in, const SourceShape& s) {
  Plan p = in;
  const uint32_t n_new = p.n_expert.value_or(s.n_expert);
  p.n_expert = n_new;
  if (n_new > s.n_expert)
    fail(p.path, "n_routed_experts = " + std::to_string(n_new) + " exceeds the source's " + std::to_string(s.n_expert) +
                     " (a surgery only removes)");
  for (uint32_t l : p.drop_layers)
    if (l >= s.n_layer)
      fail(p.path, "drop_layers names layer " + std::to_string(l) + " of " + std::to_string(s.n_layer));
  if (p.drop_layers.size() >= s.n_layer) fail(p.path, "drop_layers would remove every layer");
  for (auto& [l, lp] : p.layers) {
    const std::string where = "[layer." + std::to_string(l) + "] ";
    if (l >= s.n_layer) fail(p.path, where + "names a layer the source (" + std::to_string(s.n_layer) + ") lacks");
    if (std::count(p.drop_layers.begin(), p.drop_layers.end(), l))
      fail(p.path, where + "is in drop_layers: a dropped layer has no experts to choose");
    const bool hash = l < s.n_hash_layer;
    const std::set<uint32_t> dropped(lp.drop.begin(), lp.drop.end());
    if (!dropped.empty())
      for (uint32_t e = 0; e < s.n_expert; ++e)
        if (!dropped.count(e)) lp.keep.push_back(e);
    for (uint32_t e : dropped)
      if (e >= s.n_expert)
        fail(p.path, where + "drop names expert " + std::to_string(e) + " of " + std::to_string(s.n_expert));
    if (lp.keep.empty())
      for (uint32_t e = 0; e < s.n_expert; ++e) lp.keep.push_back(e);
    std::sort(lp.keep.begin(), lp.keep.end());
    for (uint32_t e : lp.keep)
      if (e >= s.n_expert)
        fail(p.path, where + "keep names expert " + std::to_string(e) + " of " + std::to_string(s.n_expert));
    if (lp.keep.size() != n_new)
      fail(p.path, where + "keeps " + std::to_string(lp.keep.size()) + " experts, but n_routed_experts is " +
                       std::to_string(n_new) + " (the count is one number for every layer)");
    if (!hash && (!lp.remap.empty() || !lp.merge.empty() || !lp.merge_weights.empty()))
      fail(p.path, where + (lp.merge.empty() ? "remap" : "merge") +
                       " applies to hash layers only: a learned router's gate rows choose the experts, so "
                       "removing one is deleting its row, and merging would be arithmetic on quantized "
                       "weights (docs/surgery.md §structure-not-numbers)");
  }
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    if (p.layers.count(l) || std::count(p.drop_layers.begin(), p.drop_layers.end(), l)) continue;
    if (n_new != s.n_expert)
      fail(p.path, "layer " + std::to_string(l) + " has no [layer." + std::to_string(l) +
                       "] section, but n_routed_experts changes: say which experts it keeps");
    LayerPlan lp;
    for (uint32_t e = 0; e < s.n_expert; ++e) lp.keep.push_back(e);
    p.layers[l] = lp;
  }
  for (auto& [l, lp] : p.layers) {
    if (l >= s.n_hash_layer) continue;
    const std::string where = "[layer." + std::to_string(l) + "] ";
    const std::set<uint32_t> kept(lp.keep.begin(), lp.keep.end());
    std::map<uint32_t, uint32_t> dest;
    for (const auto& cluster : lp.merge) {
      if (cluster.empty()) fail(p.path, where + "merge has an empty cluster");
      if (!kept.count(cluster[0]))
        fail(p.path, where + "merge cluster's first expert " + std::to_string(cluster[0]) +
                         " is its survivor and must be kept");
      for (uint32_t e : cluster) {
        if (e >= s.n_expert) fail(p.path, where + "merge names expert " + std::to_string(e));
        if (e != cluster[0] && kept.count(e))
          fail(p.path, where + "merge folds kept expert " + std::to_string(e) + " into " + std::to_string(cluster[0]));
        if (!dest.emplace(e, cluster[0]).second)
          fail(p.path, where + "expert " + std::to_string(e) + " is in two clusters");
      }
    }
    if (!lp.merge_weights.empty() && lp.merge_weights.size() != s.n_expert)
      fail(p.path, where + "merge_weights needs one weight per source expert (" + std::to_string(s.n_expert) + ")");
    for (const auto& [from, to] : lp.remap) {
      if (from >= s.n_expert || kept.count(from))
        fail(p.path, where + "remap key " + std::to_string(from) + " is not a removed expert");
      if (!kept.count(to))
        fail(p.path,
             where + "remap sends " + std::to_string(from) + " to " + std::to_string(to) + ", which is not kept");
      if (dest.count(from) && dest[from] != to)
        fail(p.path, where + "remap and merge disagree about expert " + std::to_string(from));
    }
    for (const auto& [from, to] : dest) lp.remap[from] = to;
    for (uint32_t e = 0, i = 0; e < s.n_expert; ++e)
      if (!kept.count(e) && !lp.remap.count(e)) lp.remap[e] = lp.keep[(i++) % lp.keep.size()];
    for (auto it = lp.remap.begin(); it != lp.remap.end();)
      if (it->first == it->second) it = lp.remap.erase(it);
      else ++it;
  }
  return p;
}

}  // namespace ds4::convert::surgery
