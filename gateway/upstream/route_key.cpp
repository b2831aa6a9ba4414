// See route_key.hpp.
#include "gateway/upstream/route_key.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace ds4::upstream {
namespace {

uint64_t fnv1a(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// splitmix64's finalizer: FNV's low bits are weak, and the ranking compares whole values.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string route_key(const serving::GenerationJob& job, serving::Token user_token) {
  if (!job.session.empty()) return job.session;
  size_t n = std::min<size_t>(job.prompt.size(), 64);
  if (user_token >= 0)
    if (auto it = std::find(job.prompt.begin(), job.prompt.end(), user_token); it != job.prompt.end())
      n = static_cast<size_t>(it - job.prompt.begin());
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    const auto t = static_cast<uint32_t>(job.prompt[i]);
    const char b[4] = {static_cast<char>(t), static_cast<char>(t >> 8), static_cast<char>(t >> 16),
                       static_cast<char>(t >> 24)};
    h = fnv1a(std::string_view(b, 4), h);
  }
  return fmt::format("prefix-{:016x}", mix(h));
}

std::vector<size_t> rendezvous_order(std::string_view key, std::span<const std::string> nodes) {
  std::vector<uint64_t> weight(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) weight[i] = mix(fnv1a(nodes[i], fnv1a(key) ^ 0x5a5a5a5a5a5a5a5aULL));
  std::vector<size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weight[a] > weight[b]; });
  return order;
}

}  // namespace ds4::upstream
