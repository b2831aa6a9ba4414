// Counters, percentiles and RSS growth; see load_stats.hpp.
#include "tools/loadgen/load_stats.hpp"

#include <algorithm>
#include <cmath>

namespace ds4::load {

void ClientCounters::merge(const ClientCounters& o) {
  sent += o.sent;
  completed += o.completed;
  status_429 += o.status_429;
  status_503 += o.status_503;
  other_status += o.other_status;
  dropped += o.dropped;
  hung += o.hung;
  connect_errors += o.connect_errors;
  connections += o.connections;
  tokens += o.tokens;
  for (const auto& [s, n] : o.statuses) statuses[s] += n;
  ttft_ms.insert(ttft_ms.end(), o.ttft_ms.begin(), o.ttft_ms.end());
  itl_ms.insert(itl_ms.end(), o.itl_ms.begin(), o.itl_ms.end());
  for (const auto& e : o.drop_examples)
    if (drop_examples.size() < 8) drop_examples.push_back(e);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const size_t i = rank < 1 ? 0 : std::min(v.size() - 1, static_cast<size_t>(rank) - 1);
  return v[i];
}

std::optional<double> rss_growth_percent(const std::vector<RssSample>& samples, double warmup_s,
                                         uint64_t RssSample::*field) {
  const RssSample* first = nullptr;
  const RssSample* last = nullptr;
  for (const auto& s : samples) {
    if (s.t_s + 1e-9 < warmup_s) continue;
    if (!first) first = &s;
    last = &s;
  }
  if (!first || first == last || first->*field == 0) return std::nullopt;
  return (static_cast<double>(last->*field) - static_cast<double>(first->*field)) * 100.0 /
         static_cast<double>(first->*field);
}

}  // namespace ds4::load
