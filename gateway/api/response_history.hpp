#pragma once
// ResponseHistory: what previous_response_id refers to (the conversation that ended in that
// response, as ChatRequest messages, so it re-renders byte-identical to the live context).
//
// Bounded in memory (least recently used dropped first); given a directory, every response is also
// a crash-safe JSON record <id>.json there, so a conversation continues after a restart. Only ids
// we issue (resp_ + 24 hex digits) are looked up on disk. An id it does not hold is a 400 asking
// for the full input. Thread-safe; the file write runs on the caller's thread (the engine worker).
// Record format, bounds and recovery: docs/api.md §response-history.
#include <cstddef>
#include <deque>
#include <filesystem>
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
  // dir empty: memory only. Otherwise the directory is created if missing; a directory that
  // cannot be created or listed is logged once and the history stays in memory.
  explicit ResponseHistory(size_t max_bytes = size_t{64} << 20, std::filesystem::path dir = {},
                           size_t max_disk_bytes = size_t{256} << 20);

  void remember(const std::string& response_id, std::vector<protocol::Message> conversation);
  std::optional<std::vector<protocol::Message>> find(const std::string& response_id);

  // True when records are written to disk (a directory was given and is usable).
  bool persistent() const { return !dir_.empty(); }

  // The record format, exposed for tests: the conversation as JSON, and back (nullopt when the
  // text is not a record).
  static std::string encode_record(const std::string& response_id, const std::vector<protocol::Message>& conversation);
  static std::optional<std::vector<protocol::Message>> decode_record(const std::string& response_id,
                                                                     std::string_view text);

 private:
  struct Entry {
    std::string id;
    std::vector<protocol::Message> conversation;
    size_t bytes = 0;
  };
  struct DiskRecord {
    std::string id;
    size_t bytes = 0;
  };
  void remember_locked(const std::string& response_id, std::vector<protocol::Message> conversation);
  void write_record(const std::string& response_id, const std::vector<protocol::Message>& conversation);
  std::optional<std::vector<protocol::Message>> load_record(const std::string& response_id);

  std::mutex mu_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_;

  std::filesystem::path dir_;  // empty: memory only
  size_t max_disk_bytes_;
  size_t disk_bytes_ = 0;
  std::deque<DiskRecord> disk_;  // oldest written first
  std::unordered_map<std::string, size_t> disk_bytes_of_;
};

}  // namespace ds4::http
