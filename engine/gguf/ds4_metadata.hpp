#pragma once
// The deepseek4.* and tokenizer.ggml.* metadata of a DS4 GGUF, written in one place: the
// converter (official config.json -> GGUF) and the forge (random test models) both describe a
// model as dims + hyper-parameters + vocabulary and must produce the same keys with the same
// types, so neither spells them out. The reader side of the dims is Ds4Dims::from_metadata;
// Ds4HyperParams::from_metadata reads the rest back.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_writer.hpp"

namespace ds4::gguf {

class GgufFile;

// The scalar hyper-parameters that are not shapes. Defaults are DeepSeek V4 Flash's.
struct Ds4HyperParams {
  float hc_eps = 1e-6f, rms_eps = 1e-6f, rope_theta = 10000.0f, compress_rope_theta = 160000.0f;
  float rope_factor = 16.0f, beta_fast = 32.0f, beta_slow = 1.0f, expert_scale = 1.5f, swiglu_limit = 10.0f;
  uint32_t rope_orig_ctx = 65536;
  uint64_t context_length = 1048576;

  // Reads them back (GgufError naming the key when one is missing or mistyped;
  // context_length defaults to 1048576 when absent).
  static Ds4HyperParams from_metadata(const GgufFile& f);
};

// The vocabulary keys: tokens and merges in rank order, token types (1 normal, 3 special).
struct Ds4Vocab {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> token_types;
  uint32_t bos_id = 0, eos_id = 1;
};

// general.architecture/name/alignment and every deepseek4.* key the engine reads.
void set_ds4_model_metadata(GgufWriter& w, const Ds4Dims& d, const Ds4HyperParams& hp, const std::string& model_name);
// tokenizer.ggml.* (gpt2 model, joyai-llm pre-tokenizer, BOS added, EOS not).
void set_ds4_tokenizer_metadata(GgufWriter& w, const Ds4Vocab& v);

}  // namespace ds4::gguf
