// Reasoning tokens for Responses encrypted_content. See reasoning_token.hpp.
#include "gateway/protocol/reasoning_token.hpp"

#include <array>
#include <cstdint>

namespace ds4::protocol {

namespace {

constexpr std::string_view kPrefix = "ds4d.r1.";
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string encode_reasoning_token(std::string_view bytes) {
  std::string out(kPrefix);
  out.reserve(kPrefix.size() + (bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> decode_reasoning_token(std::string_view token) {
  if (token.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  token.remove_prefix(kPrefix.size());
  if (token.size() % 4 != 0) return std::nullopt;
  std::array<int, 256> value;
  value.fill(-1);
  for (size_t i = 0; i < kAlphabet.size(); ++i) value[uint8_t(kAlphabet[i])] = static_cast<int>(i);
  std::string out;
  out.reserve(token.size() / 4 * 3);
  for (size_t i = 0; i < token.size(); i += 4) {
    int pad = 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = token[i + k];
      if (c == '=' && i + 4 == token.size() && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad || value[uint8_t(c)] < 0) return std::nullopt;
      v = (v << 6) | static_cast<uint32_t>(value[uint8_t(c)]);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

}  // namespace ds4::protocol
