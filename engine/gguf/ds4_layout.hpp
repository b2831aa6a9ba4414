#pragma once
// The DeepSeek V4 Flash tensor catalogue: which tensors a DS4 GGUF must hold, their shapes as
// functions of the deepseek4.* metadata, the element types this engine accepts for each, and the
// family each belongs to (for size reports and the capacity planner). It is the single place
// that knows the layout of docs/model.md §hyper-parameters, §gguf-tensors; the model loader binds tensors through it,
// `ds4ctl inspect` checks files against it and the forge writes files from it.
//
// Catalogue order is the order GGML-written DS4 files use (token_embd, then blk.0 .. blk.N-1 in
// a fixed per-layer order, then the output head), and the first allowed type of every entry is
// the type of the shipping q2 recipe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/quant/quant_type.hpp"

namespace ds4::gguf {

enum class Family {
  RoutedExperts,
  Attention,
  SharedExpert,
  Embedding,
  OutputHead,
  Router,
  HyperConnection,
  CompressorIndexer,
  Norms,
};
inline constexpr Family kAllFamilies[] = {
    Family::RoutedExperts, Family::Attention,       Family::SharedExpert,      Family::Embedding, Family::OutputHead,
    Family::Router,        Family::HyperConnection, Family::CompressorIndexer, Family::Norms,
};
std::string_view family_name(Family f);
// Family from the tensor name alone ("blk.7.ffn_up_exps.weight" -> RoutedExperts); nullopt for a
// name that is not part of the DS4 layout.
std::optional<Family> family_of(std::string_view tensor_name);

// Model dimensions, read from the deepseek4.* metadata keys.
struct Ds4Dims {
  uint32_t n_layer = 0, n_embd = 0, n_vocab = 0;
  uint32_t n_head = 0, n_head_kv = 0, head_dim = 0, value_dim = 0, rope_dim = 0;
  uint32_t q_lora_rank = 0, out_lora_rank = 0, out_groups = 0;
  uint32_t n_expert = 0, n_expert_used = 0, n_expert_shared = 0, expert_ff = 0;
  uint32_t n_hash_layer = 0, sliding_window = 0;
  uint32_t indexer_heads = 0, indexer_dim = 0, indexer_top_k = 0;
  uint32_t hc_count = 0, hc_sinkhorn_iters = 0;
  std::vector<uint32_t> compress_ratios;  // one per layer: 0, 4 or 128

  uint64_t hc_dim() const { return uint64_t{hc_count} * n_embd; }
  uint64_t hc_mix() const { return 2ull * hc_count + uint64_t{hc_count} * hc_count; }
  // Compressor output width: two interleaved rows for ratio 4, one for ratio 128.
  uint64_t compressor_width(uint32_t ratio) const { return (ratio == 4 ? 2ull : 1ull) * head_dim; }

  // Reads and sanity-checks every key; throws GgufError naming the key on a missing key, a wrong
  // type or an implausible value (which also keeps a hostile header from sizing huge tables).
  static Ds4Dims from_metadata(const GgufFile& f);
};

struct TensorRule {
  std::string name;
  Family family;
  std::vector<quant::Type> allowed;  // allowed[0] is the q2 recipe's type
  std::vector<uint64_t> dims;
  bool required = true;
  int layer = -1;  // -1 for global tensors
};

// Every tensor of a DS4 file with these dims, in file order (MTP tensors excluded).
std::vector<TensorRule> ds4_tensor_catalogue(const Ds4Dims& d);

// Bytes of this tensor a one-token decode reads: the routed experts contribute
// n_expert_used/n_expert of their size, the embedding and tid2eid one row, the rest all of it.
uint64_t decode_bytes_per_token(const TensorRule& rule, uint64_t n_bytes, const Ds4Dims& d);

// Checks a file against the catalogue: metadata present and plausible, every tensor present with
// the right shape and an allowed type, gate/up expert types equal, nothing unexpected. Returns
// one message per violation (empty when the file is a valid DS4 model). Never throws GgufError.
std::vector<std::string> check_ds4_layout(const GgufFile& f);

}  // namespace ds4::gguf
