// Tool-call ids from OS randomness. 128 bits make collisions with ids already in the contract
// store negligible, so no collision check is needed (ds4 retries on collision; at 2^-64
// birthday odds for 4 billion ids that retry never fires in practice).
#include "gateway/protocol/tool_call_id.hpp"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <random>

namespace ds4::protocol {

namespace {

void fill_random(std::array<unsigned char, 16>& bytes) {
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (got == bytes.size()) return;
  std::random_device device;  // getrandom unavailable: still an OS entropy source
  for (auto& b : bytes) b = static_cast<unsigned char>(device());
}

}  // namespace

std::string new_tool_call_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::array<unsigned char, 16> bytes{};
  fill_random(bytes);
  std::string id = "call_";
  for (unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 15]);
  }
  return id;
}

bool looks_like_our_tool_call_id(std::string_view id) {
  if (id.size() != 5 + 32 || id.substr(0, 5) != "call_") return false;
  for (char c : id.substr(5)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace ds4::protocol
