// ds4ctl surgery's library on an official-format export of ds4-tiny (6 layers, 16 experts, 3
// hash layers): a plan removes 8 experts per layer and layer 4, the result converts and runs in
// the engine, every kept tensor's bytes are identical to the source's, the load check catches a
// gap and a gate that disagrees with the config, plans that need arithmetic are refused, and
// the hash-layer merge (T2) is audited.
#include "toolchain/convert/surgery/surgery.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "engine/model/model.hpp"
#include "tests/toolchain/convert/convert_fixture.hpp"
#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/convert/surgery/load_check.hpp"

namespace ds4::convert::test {
namespace {

using namespace ds4::convert::surgery;

fs::path write_plan(const fs::path& dir, const std::string& text) {
  const fs::path p = dir / "plan.toml";
  std::ofstream(p) << text;
  return p;
}

// 16 -> 8 experts everywhere, layer 4 dropped; hash layers keep the even experts (naive remap).
const char* kPlan = R"(
name = "ds4-tiny-s8-test"
n_routed_experts = 8
drop_layers = [4]
[layer.0]
keep = [0, 2, 4, 6, 8, 10, 12, 14]
[layer.1]
keep = [0, 2, 4, 6, 8, 10, 12, 14]
remap = "naive"
[layer.2]
keep = [1, 3, 5, 7, 9, 11, 13, 15]
remap = { "0" = 1, "2" = 3 }
[layer.3]
keep = [15, 0, 3, 4, 7, 8, 11, 12]
[layer.5]
drop = [1, 2, 5, 6, 9, 10, 13, 14]
)";

boost::json::object read_config(const fs::path& dir) {
  std::ifstream in(dir / "config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return boost::json::parse(ss.str()).as_object();
}

uint64_t hash_bytes(const std::byte* p, uint64_t n) {
  return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(p), n));
}

const SurgeryResult& cut() {
  static const SurgeryResult r = [] {
    const fs::path d = scratch_dir("surgery_cut");
    return run_surgery({official_tiny().string(), (d / "out").string(), write_plan(d, kPlan).string(), {}});
  }();
  return r;
}
fs::path cut_dir() { return fs::path(cut().shards.at(0)).parent_path(); }

TEST(Surgery, RewritesConfigAndKeepsBytes) {
  const SurgeryResult& r = cut();
  const auto cfg = read_config(cut_dir());
  EXPECT_EQ(cfg.at("n_routed_experts").as_int64(), 8);
  EXPECT_EQ(cfg.at("num_hidden_layers").as_int64(), 5);
  EXPECT_EQ(cfg.at("num_hash_layers").as_int64(), 3);
  EXPECT_EQ(boost::json::serialize(cfg.at("compress_ratios")), "[0,0,4,128,128]");
  EXPECT_EQ(cfg.at("ds4d_surgery").at("name").as_string(), "ds4-tiny-s8-test");

  const Checkpoint src = Checkpoint::open(official_tiny().string()), out = Checkpoint::open(cut_dir().string());
  // Every copied tensor: same dtype, shape and bytes (hashed) as its source.
  size_t attention = 0, shared = 0, experts = 0;
  for (const auto& [to, from] : r.copied) {
    const SourceTensor *a = src.find(from), *b = out.find(to);
    ASSERT_TRUE(a && b) << to;
    EXPECT_EQ(a->shape, b->shape) << to;
    EXPECT_EQ(hash_bytes(a->data, a->n_bytes), hash_bytes(b->data, b->n_bytes)) << to << " <- " << from;
    attention += to.find(".attn.") != std::string::npos;
    shared += to.find("shared_experts") != std::string::npos;
    experts += to.find(".ffn.experts.") != std::string::npos;
  }
  EXPECT_EQ(shared, 5u * 3 * 2);  // w1/w2/w3 weight + scale in each of 5 layers
  EXPECT_EQ(experts, 5u * 8 * 3 * 2);
  EXPECT_GT(attention, 5u * 8);
  // Layer 3 keeps [15, 0, ...] sorted: new expert 0 is source 0, new 7 is source 15; layer 5 is
  // now 4 (layer 4 dropped) and its new expert 1 is source 3.
  EXPECT_EQ(r.copied.at("layers.3.ffn.experts.7.w2.weight"), "layers.3.ffn.experts.15.w2.weight");
  EXPECT_EQ(r.copied.at("layers.4.ffn.experts.1.w1.scale"), "layers.5.ffn.experts.3.w1.scale");
  EXPECT_EQ(r.copied.at("layers.4.attn.wkv.weight"), "layers.5.attn.wkv.weight");
  EXPECT_EQ(out.find("layers.5.attn.wkv.weight"), nullptr);
  // Gate rows are the kept experts' rows, copied.
  const SourceTensor *g0 = src.find("layers.3.ffn.gate.weight"), *g1 = out.find("layers.3.ffn.gate.weight");
  ASSERT_TRUE(g0 && g1);
  EXPECT_EQ(g1->shape[0], 8u);
  const uint64_t row = g0->n_bytes / 16;
  EXPECT_EQ(0, std::memcmp(g1->data + 7 * row, g0->data + 15 * row, row));
  EXPECT_EQ(0, std::memcmp(g1->data + 1 * row, g0->data + 3 * row, row));
}

TEST(Surgery, HashLayerRemap) {
  const Checkpoint src = Checkpoint::open(official_tiny().string()), out = Checkpoint::open(cut_dir().string());
  const SourceTensor *a = src.find("layers.2.ffn.gate.tid2eid"), *b = out.find("layers.2.ffn.gate.tid2eid");
  ASSERT_TRUE(a && b);
  const auto* s = reinterpret_cast<const int64_t*>(a->data);
  const auto* d = reinterpret_cast<const int64_t*>(b->data);
  // Layer 2 keeps the odd experts: odd e -> (e-1)/2; explicit remap 0 -> 1, 2 -> 3.
  for (uint64_t i = 0; i < a->n_elements(); ++i) {
    const int64_t e = s[i];
    const int64_t want = e % 2 ? (e - 1) / 2 : e == 0 ? 0 : e == 2 ? 1 : -1;
    if (want >= 0) {
      EXPECT_EQ(d[i], want) << i;
    }
    EXPECT_LT(d[i], 8);
  }
}

TEST(Surgery, ResultConvertsAndRuns) {
  const fs::path d = scratch_dir("surgery_convert");
  ConvertOptions o;
  o.source_dir = cut_dir().string();
  o.output = (d / "s8.gguf").string();
  o.recipe = "mxfp4";
  o.threads = 2;
  convert_checkpoint(o);
  auto m = Model::load(d / "s8.gguf", {.threads = 2});
  EXPECT_EQ(m->info().n_layer, 5u);
  Context c(m);
  const std::vector<int32_t> prompt{1, 17, 300, 42, 9, 511, 77, 5};
  const auto logits = c.prefill(prompt);
  ASSERT_FALSE(logits.empty());
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
  for (float x : c.decode(33)) ASSERT_TRUE(std::isfinite(x));
}

TEST(Surgery, OneShardTrial) {
  const fs::path d = scratch_dir("surgery_shard");
  const SurgeryResult r =
      run_surgery({official_tiny().string(), (d / "out").string(), write_plan(d, kPlan).string(), size_t(2)});
  ASSERT_EQ(r.shards.size(), 1u);
  EXPECT_EQ(fs::path(r.shards[0]).filename(), "model-00002-of-00003.safetensors");
  EXPECT_LT(r.tensors_in, Checkpoint::open(official_tiny().string()).tensors().size());
  EXPECT_THROW(check_loadable((d / "out").string(), false), ConvertError);  // not the whole model
}

TEST(Surgery, LoadCheckCatchesGapAndMismatchedGate) {
  const fs::path d = scratch_dir("surgery_bad");
  fs::copy(cut_dir(), d / "gap", fs::copy_options::recursive);
  // A gap: the first shard's header grows by 16 bytes without moving its data.
  const fs::path shard = d / "gap" / "model-00001-of-00003.safetensors";
  {
    std::ifstream in(shard, std::ios::binary);
    std::vector<char> all((std::istreambuf_iterator<char>(in)), {});
    uint64_t hl;
    std::memcpy(&hl, all.data(), 8);
    auto hdr = boost::json::parse(std::string_view(all.data() + 8, hl)).as_object();
    for (auto& kv : hdr) {
      if (kv.key() == "__metadata__") continue;
      auto& off = kv.value().as_object()["data_offsets"].as_array();
      if (off[0].to_number<uint64_t>() > 0)
        off[0] = off[0].to_number<uint64_t>() + 16, off[1] = off[1].to_number<uint64_t>() + 16;
    }
    std::string h = boost::json::serialize(hdr);
    while (h.size() % 8) h.push_back(' ');
    std::vector<char> data(all.begin() + 8 + hl, all.end());
    data.insert(data.end(), 16, 0);
    std::ofstream o(shard, std::ios::binary | std::ios::trunc);
    const uint64_t n = h.size();
    o.write(reinterpret_cast<const char*>(&n), 8);
    o << h;
    o.write(data.data(), std::streamsize(data.size()));
  }
  try {
    check_loadable((d / "gap").string());
    ADD_FAILURE() << "gap not caught";
  } catch (const ConvertError& e) {
    EXPECT_NE(std::string(e.what()).find("InvalidOffset"), std::string::npos) << e.what();
  }
  // A config whose expert count disagrees with the gates.
  fs::copy(cut_dir(), d / "gate", fs::copy_options::recursive);
  auto cfg = read_config(d / "gate");
  cfg["n_routed_experts"] = 16;
  std::ofstream(d / "gate" / "config.json") << boost::json::serialize(cfg);
  try {
    check_loadable((d / "gate").string());
    ADD_FAILURE() << "mismatched gate not caught";
  } catch (const ConvertError& e) {
    EXPECT_NE(std::string(e.what()).find("n_routed_experts is 16"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_loadable(cut_dir().string()));
}

TEST(Surgery, RefusesArithmeticAndBadPlans) {
  const fs::path d = scratch_dir("surgery_refuse");
  auto refused = [&](const std::string& text, const std::string& why) {
    try {
      run_surgery({official_tiny().string(), (d / "out").string(), write_plan(d, text).string(), {}});
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConvertError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused("name = \"x\"\n[layer.3]\nscale = 0.5\n", "needs arithmetic");
  refused("name = \"x\"\n[layer.4]\nmerge = [[0, 1]]\n", "hash layers only");
  refused("name = \"x\"\nn_routed_experts = 8\n[layer.3]\nkeep = [0, 1]\n", "keeps 2 experts");
  refused("name = \"x\"\nn_routed_experts = 8\n", "say which experts it keeps");
  refused("n_routed_experts = 8\n", "needs name");
  refused("name = \"x\"\n[layer.1]\nkeep = [0]\nremap = { \"1\" = 5 }\nn = 1\n", "unknown key");
}

TEST(Surgery, HashLayerMergeIsAudited) {
  const fs::path d = scratch_dir("surgery_merge");
  std::string plan = "name = \"ds4-tiny-t2\"\nn_routed_experts = 8\n";
  for (int l = 0; l < 6; ++l) {
    plan += "[layer." + std::to_string(l) + "]\nkeep = [0, 1, 2, 3, 4, 5, 6, 7]\n";
    if (l < 3) plan += "merge = [[0, 8], [1, 9, 10], [2, 11]]\nmerge_weights = [1,1,1,1,1,1,1,1,3,1,1,2,1,1,1,1]\n";
  }
  const SurgeryResult r =
      run_surgery({official_tiny().string(), (d / "out").string(), write_plan(d, plan).string(), {}});
  ASSERT_EQ(r.merges.size(), 3u * 3 * 3);  // 3 hash layers x 3 clusters x w1/w2/w3
  for (const MergeAudit& m : r.merges) {
    EXPECT_GT(m.rel_rmse(), 0.0);
    EXPECT_LT(m.rel_rmse(), 0.2);
  }
  // Merged experts are new bytes; the others are copies.
  EXPECT_EQ(r.copied.count("layers.0.ffn.experts.0.w1.weight"), 0u);
  EXPECT_EQ(r.copied.at("layers.0.ffn.experts.3.w1.weight"), "layers.0.ffn.experts.3.w1.weight");
  EXPECT_EQ(r.copied.at("layers.3.ffn.experts.0.w1.weight"), "layers.3.ffn.experts.0.w1.weight");
}

}  // namespace
}  // namespace ds4::convert::test
