// Hash-layer load, reassignment shares and the T1/T2 repairs; see hash_route.hpp.
#include "toolchain/convert/surgery/hash_route.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert::surgery {
namespace {

uint32_t config_u32(const Checkpoint& ck, const char* key) {
  const auto path = std::filesystem::path(ck.dir()) / "config.json";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    const auto v = boost::json::parse(ss.str()).as_object().at(key);
    return uint32_t(v.to_number<int64_t>());
  } catch (const std::exception& e) {
    throw ConvertError(path.string(), "", std::string("needs integer ") + key + " (" + e.what() + ")");
  }
}

int64_t id_at(const SourceTensor& t, uint64_t i) {
  if (t.dtype == Dtype::I64) {
    int64_t v;
    std::memcpy(&v, t.data + 8 * i, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, t.data + 4 * i, 4);
  return v;
}

}  // namespace

std::vector<HashLayerReport> hash_route_report(const Checkpoint& ck, const std::vector<int32_t>& tokens, uint32_t keep,
                                               const SketchOptions& sketch) {
  const uint32_t n_hash = config_u32(ck, "num_hash_layers"), n_expert = config_u32(ck, "n_routed_experts");
  if (n_hash == 0) throw ConvertError(ck.dir(), "", "the checkpoint has no hash layers (num_hash_layers = 0)");
  if (keep == 0 || keep > n_expert) throw ConvertError(ck.dir(), "", "--keep must be 1.." + std::to_string(n_expert));
  std::vector<HashLayerReport> out;
  for (uint32_t l = 0; l < n_hash; ++l) {
    const std::string name = "layers." + std::to_string(l) + ".ffn.gate.tid2eid";
    const SourceTensor* t = ck.find(name);
    if (!t || t->shape.size() != 2) throw ConvertError(ck.dir(), name, "missing or not [vocab, k]");
    const uint64_t vocab = t->shape[0], k = t->shape[1];
    HashLayerReport r;
    r.layer = l;
    r.load.assign(n_expert, 0);
    for (int32_t tok : tokens) {
      if (tok < 0 || uint64_t(tok) >= vocab)
        throw ConvertError(ck.shard_path(*t), name, "token " + std::to_string(tok) + " outside the table");
      for (uint64_t j = 0; j < k; ++j) {
        const int64_t e = id_at(*t, uint64_t(tok) * k + j);
        if (e < 0 || uint64_t(e) >= n_expert) throw ConvertError(ck.shard_path(*t), name, "expert id out of range");
        ++r.load[size_t(e)];
      }
    }
    r.assignments = uint64_t(tokens.size()) * k;
    std::vector<uint32_t> order(n_expert);
    std::iota(order.begin(), order.end(), 0u);
    // Most loaded first; ties to the lower id, so the choice is deterministic.
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return r.load[a] > r.load[b]; });
    r.keep_by_load.assign(order.begin(), order.begin() + keep);
    std::sort(r.keep_by_load.begin(), r.keep_by_load.end());
    uint64_t naive_kept = 0, load_kept = 0;
    for (uint32_t e = 0; e < keep; ++e) naive_kept += r.load[e];
    for (uint32_t e : r.keep_by_load) load_kept += r.load[e];
    const double total = double(std::max<uint64_t>(r.assignments, 1));
    r.naive_reassigned = 1.0 - double(naive_kept) / total;
    r.by_load_reassigned = 1.0 - double(load_kept) / total;
    const Similarity sim = sketch_similarity(ck, l, n_expert, sketch);
    r.sketch_coordinates = sim.coordinates, r.sketch_memory = sim.memory_bytes;
    r.t1_target.resize(n_expert);
    r.t1_cosine.resize(n_expert);
    for (uint32_t e = 0; e < n_expert; ++e) {
      if (std::binary_search(r.keep_by_load.begin(), r.keep_by_load.end(), e)) {
        r.t1_target[e] = e, r.t1_cosine[e] = 1.0f;
        continue;
      }
      uint32_t best = r.keep_by_load[0];
      for (uint32_t c : r.keep_by_load)
        if (sim.at(e, c) > sim.at(e, best)) best = c;
      r.t1_target[e] = best, r.t1_cosine[e] = sim.at(e, best);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string repair_plan(const std::vector<HashLayerReport>& rs, uint32_t n_layer, uint32_t keep,
                        const std::string& repair, const std::string& name) {
  if (repair != "naive" && repair != "t1" && repair != "t2")
    throw ConvertError("", "", "repair must be naive, t1 or t2 (got '" + repair + "')");
  auto list = [](const std::vector<uint32_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::string p = "# written by ds4ctl hash-route-report (repair " + repair + "); docs/surgery.md §plan\n";
  p += "name = \"" + name + "\"\nn_routed_experts = " + std::to_string(keep) + "\n";
  std::vector<uint32_t> first(keep);
  std::iota(first.begin(), first.end(), 0u);
  for (const HashLayerReport& r : rs) {
    p += "\n[layer." + std::to_string(r.layer) + "]  # hash layer\n";
    if (repair == "naive") {
      p += "keep = " + list(first) + "\nremap = \"naive\"\n";
      continue;
    }
    p += "keep = " + list(r.keep_by_load) + "\n";
    if (repair == "t1") {
      p += "remap = {";
      bool any = false;
      for (uint32_t e = 0; e < r.t1_target.size(); ++e)
        if (r.t1_target[e] != e)
          p += std::string(any ? ", " : " ") + "\"" + std::to_string(e) + "\" = " + std::to_string(r.t1_target[e]),
              any = true;
      p += " }\n";
    } else {
      p += "merge = [";
      bool firstc = true;
      for (uint32_t c : r.keep_by_load) {
        std::vector<uint32_t> members{c};
        for (uint32_t e = 0; e < r.t1_target.size(); ++e)
          if (r.t1_target[e] == c && e != c) members.push_back(e);
        if (members.size() < 2) continue;
        p += (firstc ? "" : ", ") + list(members), firstc = false;
      }
      p += "]\nmerge_weights = [";
      for (size_t e = 0; e < r.load.size(); ++e)
        p += (e ? ", " : "") +
             std::to_string(std::max<uint64_t>(r.load[e], 1));  // an unseen expert still counts a little
      p += "]\n";
    }
  }
  for (uint32_t l = uint32_t(rs.size()); l < n_layer; ++l)
    p += "\n[layer." + std::to_string(l) +
         "]  # learned router: placeholder, choose from router statistics\nkeep = " + list(first) + "\n";
  return p;
}

}  // namespace ds4::convert::surgery
