// See vocab_fingerprint.hpp.
#include "gateway/upstream/vocab_fingerprint.hpp"

#include <exception>
#include <string>

namespace ds4::upstream {

uint64_t vocab_fingerprint(const serving::EngineBackend& backend) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 0x100000001b3ULL;
  };
  auto mix_u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) mix(static_cast<unsigned char>(v >> (8 * i)));
  };
  mix_u32(static_cast<uint32_t>(backend.vocab_size()));
  for (size_t t = 0; t < backend.vocab_size(); ++t) {
    const auto id = static_cast<serving::Token>(t);
    std::string bytes;
    try {
      bytes = backend.token_bytes(id);
    } catch (const std::exception&) {
      bytes.clear();  // a token without bytes hashes as empty
    }
    mix_u32(static_cast<uint32_t>(t));
    mix_u32(static_cast<uint32_t>(bytes.size()));
    for (unsigned char c : bytes) mix(c);
    mix(backend.is_end_of_generation(id) ? 1 : 0);
  }
  return h;
}

}  // namespace ds4::upstream
