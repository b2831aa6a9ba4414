// Loader-side checks of a surgery output; see load_check.hpp.
#include "toolchain/convert/surgery/load_check.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/safetensors.hpp"

namespace ds4::convert::surgery {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

uint32_t config_u32(const json::object& c, const char* key, const std::string& path) {
  const json::value* v = c.if_contains(key);
  if (!v || !v->is_int64() || v->as_int64() < 0) throw ConvertError(path, "", std::string("needs integer ") + key);
  return uint32_t(v->as_int64());
}

// "layers.12.ffn.experts.3.w1.weight" -> {12, "ffn.experts.3.w1.weight"}; nullopt for others.
bool split_layer(const std::string& name, uint32_t& layer, std::string& rest) {
  if (name.rfind("layers.", 0) != 0) return false;
  const size_t dot = name.find('.', 7);
  if (dot == std::string::npos) return false;
  layer = uint32_t(std::stoul(name.substr(7, dot - 7)));
  rest = name.substr(dot + 1);
  return true;
}

}  // namespace

void check_contiguous(const std::string& shard_path) {
  const auto s = Shard::open(shard_path);
  std::vector<const SourceTensor*> ts;
  for (const SourceTensor& t : s->tensors()) ts.push_back(&t);
  std::sort(ts.begin(), ts.end(), [](auto* a, auto* b) { return a->file_offset < b->file_offset; });
  uint64_t hlen = 0;
  std::memcpy(&hlen, s->header_json().data() - 8, 8);
  uint64_t expect = 8 + hlen;
  for (const SourceTensor* t : ts) {
    if (t->file_offset != expect)
      throw ConvertError(shard_path, t->name,
                         "InvalidOffset: data begins at byte " + std::to_string(t->file_offset - 8 - hlen) +
                             " of the data section, the previous tensor ends at " + std::to_string(expect - 8 - hlen) +
                             " (a serving loader such as vLLM's rejects gaps between tensors)");
    expect += t->n_bytes;
  }
  if (expect != s->size())
    throw ConvertError(shard_path, ts.empty() ? "" : ts.back()->name,
                       "InvalidOffset: " + std::to_string(s->size() - expect) +
                           " bytes after the last tensor (the data section must end with it)");
}

void check_loadable(const std::string& dir, bool partial) {
  const std::string cpath = (fs::path(dir) / "config.json").string();
  std::ifstream in(cpath);
  if (!in) throw ConvertError(cpath, "", "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  json::value root;
  try {
    root = json::parse(ss.str());
  } catch (const std::exception& e) {
    throw ConvertError(cpath, "", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) throw ConvertError(cpath, "", "not a JSON object");
  const json::object& c = root.as_object();
  const uint32_t n_layer = config_u32(c, "num_hidden_layers", cpath),
                 n_expert = config_u32(c, "n_routed_experts", cpath), n_hash = config_u32(c, "num_hash_layers", cpath),
                 k = config_u32(c, "num_experts_per_tok", cpath), vocab = config_u32(c, "vocab_size", cpath);

  const Checkpoint ck = Checkpoint::open(dir);
  for (const auto& s : ck.shards()) check_contiguous(s->path());

  std::map<uint32_t, std::set<std::string>> seen;  // layer -> routing pieces present
  for (const SourceTensor* t : ck.tensors()) {
    uint32_t l = 0;
    std::string rest;
    if (!split_layer(t->name, l, rest)) continue;
    const std::string& file = ck.shard_path(*t);
    if (l >= n_layer)
      throw ConvertError(file, t->name,
                         "layer " + std::to_string(l) + " past num_hidden_layers " + std::to_string(n_layer));
    if (rest == "ffn.gate.weight" || rest == "ffn.gate.bias") {
      if (t->shape.empty() || t->shape[0] != n_expert)
        throw ConvertError(file, t->name,
                           "has " + std::to_string(t->shape.empty() ? 0 : t->shape[0]) +
                               " expert rows, config.json n_routed_experts is " + std::to_string(n_expert));
      seen[l].insert(rest);
    } else if (rest == "ffn.gate.tid2eid") {
      if (l >= n_hash)
        throw ConvertError(file, t->name, "tid2eid in a layer past num_hash_layers " + std::to_string(n_hash));
      if (t->shape.size() != 2 || t->shape[0] != vocab || t->shape[1] != k)
        throw ConvertError(file, t->name, "must be [vocab_size, num_experts_per_tok]");
      if (t->dtype != Dtype::I64 && t->dtype != Dtype::I32) throw ConvertError(file, t->name, "must be I64 or I32");
      for (uint64_t i = 0; i < t->n_elements(); ++i) {
        int64_t v = 0;
        if (t->dtype == Dtype::I64) std::memcpy(&v, t->data + 8 * i, 8);
        else {
          int32_t v32 = 0;
          std::memcpy(&v32, t->data + 4 * i, 4);
          v = v32;
        }
        if (v < 0 || uint64_t(v) >= n_expert)
          throw ConvertError(file, t->name,
                             "token " + std::to_string(i / k) + " routes to expert " + std::to_string(v) +
                                 ", config.json n_routed_experts is " + std::to_string(n_expert));
      }
      seen[l].insert(rest);
    } else if (rest.rfind("ffn.experts.", 0) == 0) {
      const size_t b = 12, e = rest.find('.', b);
      const uint32_t id = uint32_t(std::stoul(rest.substr(b, e - b)));
      if (id >= n_expert)
        throw ConvertError(file, t->name,
                           "expert " + std::to_string(id) + " past n_routed_experts " + std::to_string(n_expert));
      seen[l].insert(rest);
    }
  }
  if (partial) return;
  for (uint32_t l = 0; l < n_layer; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    auto need = [&](const std::string& rest) {
      if (!seen[l].count(rest)) throw ConvertError(dir, p + rest, "missing (config.json describes this layer)");
    };
    need("ffn.gate.weight");
    if (l < n_hash) need("ffn.gate.tid2eid");
    for (uint32_t e = 0; e < n_expert; ++e)
      for (const char* w : {".w1.weight", ".w2.weight", ".w3.weight"}) need("ffn.experts." + std::to_string(e) + w);
  }
}

}  // namespace ds4::convert::surgery
