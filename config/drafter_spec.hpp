#pragma once
// speculation.drafter: which drafter proposes tokens for exact speculative decoding
// (docs/speculation.md §configuration). `none` (or empty): no drafting; `ngram`: prompt lookup
// over the prompt and the generated text; `mtp:FILE`: the DS4 MTP block from a sidecar GGUF.
// parse_drafter checks the spelling only; whether the file is usable is checked at daemon start.
#include <cstdint>
#include <string>

namespace ds4::config {

enum class DrafterKind { None, Ngram, Mtp };

struct DrafterSpec {
  DrafterKind kind = DrafterKind::None;
  std::string path;  // mtp only
};

// Throws std::invalid_argument naming the accepted forms for anything else (a bare path among
// them: it used to be the key's meaning, and silently reading it as a file hid typos).
DrafterSpec parse_drafter(const std::string& value);
// The canonical spelling ("none", "ngram", "mtp:FILE").
std::string drafter_name(const DrafterSpec& spec);

// The most drafts one step verifies: the engine's rollback ring must hold them (ContextOptions
// rollback is 64), and beyond a few tokens acceptance falls off geometrically anyway.
constexpr uint32_t kMaxSpeculationK = 16;

}  // namespace ds4::config
