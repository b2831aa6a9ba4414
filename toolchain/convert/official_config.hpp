#pragma once
// config.json and tokenizer.json of an official-format checkpoint <-> the deepseek4.* and
// tokenizer.ggml.* metadata of a DS4 GGUF. The keys read:
// docs/toolchain.md §official-layout-and-config.
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
