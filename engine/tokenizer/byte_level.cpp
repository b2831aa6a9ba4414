// GPT-2 byte <-> code point tables, built once at compile time. See byte_level.hpp.
#include "engine/tokenizer/byte_level.hpp"

#include <array>

namespace ds4::tokenizer {
namespace {

constexpr bool maps_to_itself(uint32_t b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

struct ByteTables {
  std::array<uint32_t, 256> to_cp{};
  // Inverse for code points 0..(256+68): every mapped code point is below 324.
  std::array<int16_t, 512> from_cp{};
};

constexpr ByteTables make_tables() {
  ByteTables t{};
  for (auto& x : t.from_cp) x = -1;
  uint32_t shifted = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t cp = maps_to_itself(b) ? b : 256 + shifted++;
    t.to_cp[b] = cp;
    t.from_cp[cp] = static_cast<int16_t>(b);
  }
  return t;
}

constexpr ByteTables kTables = make_tables();
static_assert(kTables.to_cp[' '] == 0x120, "space maps to U+0120 (Ġ)");
static_assert(kTables.to_cp['\n'] == 0x10A, "newline maps to U+010A (Ċ)");

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return kTables.to_cp[b]; }

std::optional<uint8_t> codepoint_to_byte(uint32_t cp) {
  if (cp >= kTables.from_cp.size() || kTables.from_cp[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(kTables.from_cp[cp]);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp <= 0x7f) {
    out.push_back(static_cast<char>(cp));
  } else if (cp <= 0x7ff) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp <= 0xffff) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

uint32_t peek_codepoint(std::string_view s, size_t pos, size_t* next) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + pos;
  size_t end = next_char(s, pos);
  *next = end;
  switch (end - pos) {
    case 2: return (uint32_t(p[0] & 0x1f) << 6) | (p[1] & 0x3f);
    case 3: return (uint32_t(p[0] & 0x0f) << 12) | (uint32_t(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
    case 4:
      return (uint32_t(p[0] & 0x07) << 18) | (uint32_t(p[1] & 0x3f) << 12) | (uint32_t(p[2] & 0x3f) << 6) |
             (p[3] & 0x3f);
    default: return p[0];
  }
}

std::string bytes_to_vocab_string(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(c)));
  return out;
}

std::string vocab_string_to_bytes(std::string_view vocab) {
  std::string out;
  out.reserve(vocab.size());
  for (size_t pos = 0; pos < vocab.size();) {
    size_t next = pos;
    uint32_t cp = peek_codepoint(vocab, pos, &next);
    if (auto b = codepoint_to_byte(cp)) out.push_back(static_cast<char>(*b));
    pos = next;
  }
  return out;
}

}  // namespace ds4::tokenizer
