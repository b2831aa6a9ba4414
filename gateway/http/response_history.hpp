#pragma once
// ResponseHistory: what previous_response_id refers to.
//
// A Responses client may send only the new items plus previous_response_id instead of the whole
// conversation. For that the server must know the conversation that ended in that response: the
// input it was rendered from (instructions excluded: they are per request) plus the assistant
// turn it produced, as ChatRequest messages. The conversation re-rendered from them is
// byte-identical to the live context when the turn is still there, so the prefix cache decides
// the cost as for a full replay. The history is in memory and bounded (least recently used
// dropped first); an id it does not hold (evicted, never issued, or from before a restart) is a
// 400 telling the client to resend the full input. Thread-safe.
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gateway/protocol/chat_request.hpp"

namespace ds4::http {

class ResponseHistory {
 public:
  explicit ResponseHistory(size_t max_bytes = size_t{64} << 20) : max_bytes_(max_bytes) {}

  void remember(const std::string& response_id, std::vector<protocol::Message> conversation);
  std::optional<std::vector<protocol::Message>> find(const std::string& response_id);

 private:
  struct Entry {
    std::string id;
    std::vector<protocol::Message> conversation;
    size_t bytes = 0;
  };
  std::mutex mu_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_;
};

}  // namespace ds4::http
