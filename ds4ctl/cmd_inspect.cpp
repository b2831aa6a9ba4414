// `ds4ctl inspect FILE.gguf`: what a DS4 GGUF holds and whether this engine can run it.
// Prints the header, the model dimensions, and one table row per tensor family (count, types,
// bytes, GiB) plus the bytes a one-token decode reads; then checks the file against the DS4
// catalogue (engine/gguf/ds4_layout) and lists every violation. Exit status: 0 valid, 1 invalid
// or unreadable (each problem is printed on its own line on stderr).
#include <fmt/core.h>

#include <map>
#include <memory>
#include <set>

#include "ds4ctl/command_registry.hpp"
#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_reader.hpp"

namespace {

using namespace ds4::gguf;

struct FamilyStats {
  uint64_t count = 0, bytes = 0, per_token = 0;
  std::set<std::string> types;
};

int inspect(const std::string& path) {
  GgufFile f = [&] {
    try {
      return GgufFile::open(path);
    } catch (const GgufError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      throw;
    }
  }();
  fmt::print("{}: GGUF v{}, {} metadata keys, {} tensors, alignment {}, data at byte {}, {} bytes\n", path, f.version(),
             f.metadata().size(), f.tensors().size(), f.alignment(), f.data_offset(), f.size());

  std::optional<Ds4Dims> dims;
  try {
    dims = Ds4Dims::from_metadata(f);
    const Ds4Dims& d = *dims;
    std::string ratios;
    for (uint32_t r : d.compress_ratios) ratios += (ratios.empty() ? "" : ",") + std::to_string(r);
    fmt::print(
        "model: {} layers, n_embd {}, vocab {}, {} heads x {}, q_lora {}, out {}x{}, experts {} (used {}, "
        "shared {}) ff {}, hash layers {}, compress ratios {}\n",
        d.n_layer, d.n_embd, d.n_vocab, d.n_head, d.head_dim, d.q_lora_rank, d.out_groups, d.out_lora_rank, d.n_expert,
        d.n_expert_used, d.n_expert_shared, d.expert_ff, d.n_hash_layer, ratios);
  } catch (const GgufError&) {
    // reported by check_ds4_layout below
  }

  std::map<Family, FamilyStats> stats;
  FamilyStats unknown;
  std::map<std::string, const TensorRule*> rule_of;
  std::vector<TensorRule> rules;
  if (dims) {
    rules = ds4_tensor_catalogue(*dims);
    for (const TensorRule& r : rules) rule_of[r.name] = &r;
  }
  for (const TensorInfo& t : f.tensors()) {
    auto fam = family_of(t.name);
    FamilyStats& s = fam ? stats[*fam] : unknown;
    s.count++;
    s.bytes += t.n_bytes;
    s.types.insert(std::string(ds4::quant::type_info(t.type).name));
    if (auto it = rule_of.find(t.name); it != rule_of.end())
      s.per_token += decode_bytes_per_token(*it->second, t.n_bytes, *dims);
  }
  auto row = [](std::string_view name, const FamilyStats& s) {
    std::string types;
    for (const auto& t : s.types) types += (types.empty() ? "" : ",") + t;
    fmt::print("  {:<20} {:>7} {:<30} {:>15} {:>10.3f} {:>15}\n", name, s.count, types, s.bytes,
               s.bytes / double(1ull << 30), s.per_token);
  };
  fmt::print("  {:<20} {:>7} {:<30} {:>15} {:>10} {:>15}\n", "family", "tensors", "types", "bytes", "GiB",
             "read/token");
  FamilyStats total;
  for (Family fam : kAllFamilies) {
    const FamilyStats& s = stats[fam];
    row(family_name(fam), s);
    total.count += s.count;
    total.bytes += s.bytes;
    total.per_token += s.per_token;
    total.types.insert(s.types.begin(), s.types.end());
  }
  if (unknown.count) row("(not DS4)", unknown);
  total.count += unknown.count;
  total.bytes += unknown.bytes;
  row("total", total);
  if (dims) fmt::print("decode reads {:.1f} MiB of weights per token\n", total.per_token / double(1 << 20));

  std::vector<std::string> issues = check_ds4_layout(f);
  if (issues.empty()) {
    fmt::print("layout: OK (every tensor of the DS4 catalogue present with the right shape and type)\n");
    return 0;
  }
  for (const std::string& i : issues) fmt::print(stderr, "error: {}: {}\n", path, i);
  fmt::print(stderr, "{}: {} layout violation{}\n", path, issues.size(), issues.size() == 1 ? "" : "s");
  return 1;
}

ds4ctl::Register reg{"inspect", "Show a DS4 GGUF's tensor families and sizes and check its layout",
                     [](CLI::App& sub) -> ds4ctl::RunFn {
                       auto path = std::make_shared<std::string>();
                       sub.add_option("file", *path, "GGUF model file")->required();
                       return [path] {
                         try {
                           return inspect(*path);
                         } catch (const GgufError&) {
                           return 1;  // already printed
                         }
                       };
                     }};

}  // namespace
