#pragma once
// config.json and tokenizer.json of an official-format checkpoint <-> the deepseek4.* and
// tokenizer.ggml.* metadata of a DS4 GGUF.
//
// config.json keys read (all required unless noted):
//   hidden_size, num_hidden_layers, vocab_size, num_attention_heads, head_dim, qk_rope_head_dim,
//   q_lora_rank, o_lora_rank, o_groups, n_routed_experts, num_experts_per_tok, n_shared_experts,
//   moe_intermediate_size, num_hash_layers, sliding_window, index_n_heads, index_head_dim,
//   index_topk, hc_mult, hc_sinkhorn_iters, hc_eps, rms_norm_eps, rope_theta,
//   compress_rope_theta, compress_ratios (per layer), rope_scaling {factor,
//   original_max_position_embeddings, beta_fast, beta_slow}, routed_scaling_factor,
//   swiglu_limit, max_position_embeddings, bos_token_id, eos_token_id.
// tokenizer.json: model.vocab (token -> id), model.merges ("a b" strings or [a, b] pairs) and
// added_tokens (id, content, special).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/ds4_metadata.hpp"
#include "engine/gguf/gguf_writer.hpp"

namespace ds4::convert {

struct OfficialConfig {
  gguf::Ds4Dims dims;
  gguf::Ds4HyperParams hp;
  int32_t bos_id = 0, eos_id = 1;
  std::string config_json;  // the file's bytes (part of the source fingerprint)

  std::vector<std::string> tokens, merges;
  std::vector<int32_t> token_types;  // 1 normal, 3 special
};

// Reads <dir>/config.json and <dir>/tokenizer.json; throws ConvertError naming file and key.
OfficialConfig read_official_config(const std::string& dir);
// Sets every deepseek4.* and tokenizer.ggml.* key the engine reads (gguf/ds4_metadata.hpp).
// `tokenizer` false leaves out the tokenizer.ggml.* keys (the MTP sidecar uses the main file's).
void set_ds4_metadata(gguf::GgufWriter& w, const OfficialConfig& c, const std::string& model_name,
                      bool tokenizer = true);
// The inverse (fixture generator): config and tokenizer from a DS4 GGUF's metadata.
OfficialConfig config_from_gguf(const gguf::GgufFile& f);
void write_official_config(const std::string& dir, const OfficialConfig& c);

}  // namespace ds4::convert
