// The previous_response_id history. See response_history.hpp.
#include "gateway/http/response_history.hpp"

namespace ds4::http {

namespace {

size_t bytes_of(const std::vector<protocol::Message>& conversation) {
  size_t n = 0;
  for (const auto& m : conversation) {
    n += 64 + m.content.size() + (m.reasoning ? m.reasoning->size() : 0) + m.tool_call_id.size();
    for (const auto& c : m.tool_calls) n += 32 + c.id.size() + c.name.size() + c.arguments.size();
  }
  return n;
}

}  // namespace

void ResponseHistory::remember(const std::string& response_id, std::vector<protocol::Message> conversation) {
  size_t cost = bytes_of(conversation) + response_id.size();
  std::lock_guard lock(mu_);
  if (cost > max_bytes_) return;
  if (auto it = by_id_.find(response_id); it != by_id_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    by_id_.erase(it);
  }
  lru_.push_front(Entry{response_id, std::move(conversation), cost});
  by_id_[response_id] = lru_.begin();
  bytes_ += cost;
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    by_id_.erase(lru_.back().id);
    lru_.pop_back();
  }
}

std::optional<std::vector<protocol::Message>> ResponseHistory::find(const std::string& response_id) {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(response_id);
  if (it == by_id_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->conversation;
}

}  // namespace ds4::http
