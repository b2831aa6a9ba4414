// The previous_response_id history, in memory and on disk. See response_history.hpp.
#include "gateway/api/response_history.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "gateway/cache/checkpoint_file.hpp"

namespace ds4::http {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kRecordSuffix = ".json";
constexpr int kRecordVersion = 1;

size_t bytes_of(const std::vector<protocol::Message>& conversation) {
  size_t n = 0;
  for (const auto& m : conversation) {
    n += 64 + m.content.size() + (m.reasoning ? m.reasoning->size() : 0) + m.tool_call_id.size();
    for (const auto& c : m.tool_calls) n += 32 + c.id.size() + c.name.size() + c.arguments.size();
  }
  return n;
}

// Only the ids new_response_id("resp_") issues: "resp_" and 24 lowercase hex digits.
bool is_issued_id(std::string_view id) {
  if (id.size() != 29 || !id.starts_with("resp_")) return false;
  return std::all_of(id.begin() + 5, id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<protocol::Role> role_of(std::string_view name) {
  for (auto r : {protocol::Role::System, protocol::Role::Developer, protocol::Role::User, protocol::Role::Assistant,
                 protocol::Role::Tool})
    if (name == protocol::role_name(r)) return r;
  return std::nullopt;
}

}  // namespace

std::string ResponseHistory::encode_record(const std::string& response_id,
                                           const std::vector<protocol::Message>& conversation) {
  json::array messages;
  for (const auto& m : conversation) {
    json::object o{{"role", protocol::role_name(m.role)}, {"content", m.content}};
    if (m.reasoning) o["reasoning"] = *m.reasoning;
    if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
    if (!m.tool_calls.empty()) {
      json::array calls;
      for (const auto& c : m.tool_calls)
        calls.push_back(json::object{{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
      o["tool_calls"] = std::move(calls);
    }
    messages.push_back(std::move(o));
  }
  return json::serialize(
      json::object{{"ds4d_response_record", kRecordVersion}, {"id", response_id}, {"conversation", messages}});
}

std::optional<std::vector<protocol::Message>> ResponseHistory::decode_record(const std::string& response_id,
                                                                             std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  const auto* version = o.if_contains("ds4d_response_record");
  const auto* id = o.if_contains("id");
  const auto* conversation = o.if_contains("conversation");
  if (!version || !version->is_int64() || version->get_int64() != kRecordVersion || !id || !id->is_string() ||
      id->get_string() != response_id || !conversation || !conversation->is_array())
    return std::nullopt;
  auto str = [](const json::object& m, std::string_view key, std::string& out) {
    const auto* f = m.if_contains(key);
    if (!f) return true;
    if (!f->is_string()) return false;
    out = std::string(f->get_string());
    return true;
  };
  std::vector<protocol::Message> out;
  for (const auto& item : conversation->get_array()) {
    if (!item.is_object()) return std::nullopt;
    const auto& m = item.get_object();
    protocol::Message msg;
    std::string role;
    if (!str(m, "role", role)) return std::nullopt;
    auto r = role_of(role);
    if (!r) return std::nullopt;
    msg.role = *r;
    if (!str(m, "content", msg.content) || !str(m, "tool_call_id", msg.tool_call_id)) return std::nullopt;
    if (m.contains("reasoning")) {
      std::string reasoning;
      if (!str(m, "reasoning", reasoning)) return std::nullopt;
      msg.reasoning = std::move(reasoning);
    }
    if (const auto* calls = m.if_contains("tool_calls")) {
      if (!calls->is_array()) return std::nullopt;
      for (const auto& c : calls->get_array()) {
        if (!c.is_object()) return std::nullopt;
        protocol::ToolCall call;
        if (!str(c.get_object(), "id", call.id) || !str(c.get_object(), "name", call.name) ||
            !str(c.get_object(), "arguments", call.arguments))
          return std::nullopt;
        msg.tool_calls.push_back(std::move(call));
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

ResponseHistory::ResponseHistory(size_t max_bytes, fs::path dir, size_t max_disk_bytes)
    : max_bytes_(max_bytes), max_disk_bytes_(max_disk_bytes) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    spdlog::warn("responses: cannot create {} ({}); previous_response_id will not survive a restart", dir.string(),
                 ec.message());
    return;
  }
  struct Found {
    fs::file_time_type written;
    std::string id;
    size_t bytes;
  };
  std::vector<Found> found;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code e;
    if (name.starts_with(cache::kTempPrefix)) {  // an interrupted write: never a record
      fs::remove(it->path(), e);
      continue;
    }
    if (!name.ends_with(kRecordSuffix)) continue;  // not ours; leave it alone
    std::string id = name.substr(0, name.size() - kRecordSuffix.size());
    if (!is_issued_id(id)) continue;
    const auto size = fs::file_size(it->path(), e);
    const auto written = fs::last_write_time(it->path(), e);
    if (!e) found.push_back({written, std::move(id), static_cast<size_t>(size)});
  }
  if (ec) {
    spdlog::warn("responses: cannot list {} ({}); previous_response_id will not survive a restart", dir.string(),
                 ec.message());
    return;
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.written < b.written; });
  dir_ = std::move(dir);
  for (auto& f : found) {
    disk_bytes_ += f.bytes;
    disk_bytes_of_[f.id] = f.bytes;
    disk_.push_back({std::move(f.id), f.bytes});
  }
  if (!found.empty()) spdlog::info("responses: {} stored responses in {}", found.size(), dir_.string());
}

void ResponseHistory::remember_locked(const std::string& response_id, std::vector<protocol::Message> conversation) {
  size_t cost = bytes_of(conversation) + response_id.size();
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

void ResponseHistory::remember(const std::string& response_id, std::vector<protocol::Message> conversation) {
  std::lock_guard lock(mu_);
  if (!dir_.empty() && is_issued_id(response_id)) write_record(response_id, conversation);
  remember_locked(response_id, std::move(conversation));
}

// Under mu_. A failed write is logged and leaves the response in memory only.
void ResponseHistory::write_record(const std::string& response_id, const std::vector<protocol::Message>& conversation) {
  const std::string text = encode_record(response_id, conversation);
  if (text.size() > max_disk_bytes_) return;
  try {
    cache::write_file_atomically(dir_, response_id + std::string(kRecordSuffix),
                                 std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  } catch (const std::exception& e) {
    spdlog::warn("responses: cannot store {}: {}", response_id, e.what());
    return;
  }
  if (auto it = disk_bytes_of_.find(response_id); it != disk_bytes_of_.end()) disk_bytes_ -= it->second;
  disk_bytes_of_[response_id] = text.size();
  disk_.push_back({response_id, text.size()});
  disk_bytes_ += text.size();
  while (disk_bytes_ > max_disk_bytes_ && !disk_.empty()) {
    DiskRecord oldest = disk_.front();
    disk_.pop_front();
    auto it = disk_bytes_of_.find(oldest.id);
    if (it == disk_bytes_of_.end() || it->second != oldest.bytes) continue;  // rewritten later
    disk_bytes_ -= it->second;
    disk_bytes_of_.erase(it);
    std::error_code ec;
    fs::remove(dir_ / (oldest.id + std::string(kRecordSuffix)), ec);
  }
}

// Under mu_.
std::optional<std::vector<protocol::Message>> ResponseHistory::load_record(const std::string& response_id) {
  if (dir_.empty() || !is_issued_id(response_id)) return std::nullopt;
  auto size = disk_bytes_of_.find(response_id);
  if (size == disk_bytes_of_.end()) return std::nullopt;
  const fs::path path = dir_ / (response_id + std::string(kRecordSuffix));
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto conversation = in ? decode_record(response_id, text.str()) : std::nullopt;
  if (!conversation) {
    spdlog::warn("responses: removed {}: not a readable response record", path.string());
    disk_bytes_ -= size->second;
    disk_bytes_of_.erase(size);
    std::error_code ec;
    fs::remove(path, ec);
  }
  return conversation;
}

std::optional<std::vector<protocol::Message>> ResponseHistory::find(const std::string& response_id) {
  std::lock_guard lock(mu_);
  auto it = by_id_.find(response_id);
  if (it != by_id_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->conversation;
  }
  auto loaded = load_record(response_id);
  if (loaded) remember_locked(response_id, *loaded);
  return loaded;
}

}  // namespace ds4::http
