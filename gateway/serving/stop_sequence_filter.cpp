// Streaming stop-string matching. See stop_sequence_filter.hpp.
#include "gateway/serving/stop_sequence_filter.hpp"

#include <algorithm>

namespace ds4::serving {

StopSequenceFilter::StopSequenceFilter(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
  for (const auto& s : stops_) hold_ = std::max(hold_, s.size() - 1);
}

StopSequenceFilter::Result StopSequenceFilter::push(std::string_view bytes) {
  Result r;
  if (stops_.empty()) {
    r.release.assign(bytes);
    return r;
  }
  // pending_ only ever holds a proper prefix of some stop string, so it stays short and a full
  // search of it plus the new bytes is cheap.
  pending_.append(bytes);
  size_t earliest = std::string::npos;
  for (const auto& s : stops_) {
    size_t at = pending_.find(s);
    if (at < earliest) earliest = at;
  }
  if (earliest != std::string::npos) {
    r.release = pending_.substr(0, earliest);
    r.stopped = true;
    pending_.clear();
    return r;
  }
  // Keep the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    size_t max_len = std::min(pending_.size(), s.size() - 1);
    for (size_t len = max_len; len > keep; --len)
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
  }
  r.release = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return r;
}

std::string StopSequenceFilter::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace ds4::serving
