// The contract store (see contract_store.hpp): a byte-bounded, thread-safe LRU of generated
// turns, indexed by tool-call id and by turn fingerprint, with a checked binary image.
//
// Image layout (little-endian):
//   "DS4CTRCT" | u32 version (2) | u32 turn count | turns, least recently used first |
//   u64 FNV-1a over all preceding bytes.
//   turn = u64 fingerprint | u8 has_reasoning | str reasoning | str content | str dsml_block |
//          u32 call count | calls | u64 end_tokens | u64 end_hash (version 2 only);
//   call = str id | str name | str arguments_json;
//   str  = u32 length | bytes.
#include "gateway/protocol/contract_store.hpp"

#include <cstring>

namespace ds4::protocol {

namespace {

constexpr std::string_view kMagic = "DS4CTRCT";
constexpr uint32_t kVersion = 2;
constexpr uint32_t kOldestVersion = 1;  // without end_tokens/end_hash: read as not placed

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_str(std::string& out, std::string_view s) {
  if (s.size() > UINT32_MAX) throw ContractStoreError("contract store: string too large to serialize");
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Bounds-checked reader over an image; every failure names the byte offset.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint64_t u(int bytes, const char* what) {
    need(static_cast<size_t>(bytes), what);
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(data_[pos_ + i])} << (8 * i);
    pos_ += static_cast<size_t>(bytes);
    return v;
  }
  std::string str(const char* what) {
    auto n = static_cast<size_t>(u(4, what));
    need(n, what);
    std::string s(data_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  void need(size_t n, const char* what) const {
    if (n > data_.size() - pos_)
      throw ContractStoreError("contract store image truncated reading " + std::string(what) + " at byte " +
                               std::to_string(pos_));
  }
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

const char* contract_mode_name(ContractMode mode) {
  switch (mode) {
    case ContractMode::Off: return "off";
    case ContractMode::Warn: return "warn";
    case ContractMode::Strict: return "strict";
  }
  return "warn";
}

std::optional<ContractMode> parse_contract_mode(std::string_view name) {
  if (name == "off") return ContractMode::Off;
  if (name == "warn") return ContractMode::Warn;
  if (name == "strict") return ContractMode::Strict;
  return std::nullopt;
}

const char* violation_kind_name(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::ReasoningMissing: return "reasoning_missing";
    case ViolationKind::ReasoningChanged: return "reasoning_changed";
    case ViolationKind::UnknownToolCallId: return "unknown_tool_call_id";
    case ViolationKind::ArgumentsChanged: return "arguments_changed";
  }
  return "unknown";
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t turn_fingerprint(uint64_t anchor, std::string_view content) {
  char a[9];
  for (int i = 0; i < 8; ++i) a[i] = static_cast<char>((anchor >> (8 * i)) & 0xFF);
  a[8] = '\xFF';
  uint64_t h = fnv1a64(content, fnv1a64(std::string_view(a, 9)));
  return h == 0 ? 1 : h;  // 0 means "no fingerprint"
}

TurnContract make_turn_contract(uint64_t anchor, const ParsedMessage& message) {
  TurnContract turn;
  turn.fingerprint = turn_fingerprint(anchor, message.content);
  turn.reasoning = message.reasoning;
  turn.content = message.content;
  if (message.status == ToolCallsStatus::Complete) {
    turn.dsml_block = message.dsml_block;
    for (const auto& call : message.calls) turn.calls.push_back({call.id, call.name, call.arguments_json});
  }
  return turn;
}

ContractStore::ContractStore(size_t max_bytes) : max_bytes_(max_bytes) {}

size_t ContractStore::cost(const TurnContract& turn) {
  size_t c = kEntryOverheadBytes + turn.content.size() + turn.dsml_block.size() +
             (turn.reasoning ? turn.reasoning->size() : 0);
  for (const auto& call : turn.calls)
    c += kEntryOverheadBytes + call.id.size() + call.name.size() + call.arguments_json.size();
  return c;
}

void ContractStore::erase_locked(List::iterator it) {
  for (const auto& call : it->turn.calls) {
    auto found = by_id_.find(call.id);
    if (found != by_id_.end() && found->second == it) by_id_.erase(found);
  }
  if (it->turn.fingerprint != 0) {
    auto found = by_fingerprint_.find(it->turn.fingerprint);
    if (found != by_fingerprint_.end() && found->second == it) by_fingerprint_.erase(found);
  }
  bytes_ -= it->cost;
  lru_.erase(it);
}

void ContractStore::evict_locked() {
  while (bytes_ > max_bytes_ && !lru_.empty()) erase_locked(std::prev(lru_.end()));
}

void ContractStore::insert_locked(TurnContract turn) {
  size_t c = cost(turn);
  if (c > max_bytes_) return;
  // A turn that reuses an id or fingerprint replaces the older turn that held it.
  for (const auto& call : turn.calls) {
    auto found = by_id_.find(call.id);
    if (found != by_id_.end()) erase_locked(found->second);
  }
  if (turn.fingerprint != 0) {
    auto found = by_fingerprint_.find(turn.fingerprint);
    if (found != by_fingerprint_.end()) erase_locked(found->second);
  }
  lru_.push_front(Entry{std::move(turn), c, ++serial_});
  auto it = lru_.begin();
  bytes_ += c;
  for (const auto& call : it->turn.calls) by_id_[call.id] = it;
  if (it->turn.fingerprint != 0) by_fingerprint_[it->turn.fingerprint] = it;
  evict_locked();
}

void ContractStore::remember(TurnContract turn) {
  std::lock_guard lock(mutex_);
  insert_locked(std::move(turn));
}

std::optional<TurnContract> ContractStore::find_by_tool_call_id(std::string_view id) const {
  std::lock_guard lock(mutex_);
  auto found = by_id_.find(std::string(id));
  if (found == by_id_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, found->second);
  return found->second->turn;
}

std::optional<TurnContract> ContractStore::find_by_fingerprint(uint64_t fingerprint) const {
  std::lock_guard lock(mutex_);
  auto found = by_fingerprint_.find(fingerprint);
  if (found == by_fingerprint_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, found->second);
  return found->second->turn;
}

size_t ContractStore::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

size_t ContractStore::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

size_t ContractStore::max_bytes() const { return max_bytes_; }

uint64_t ContractStore::remembered() const {
  std::lock_guard lock(mutex_);
  return serial_;
}

void ContractStore::place_new_turns(uint64_t since, uint64_t end_tokens, uint64_t end_hash) {
  std::lock_guard lock(mutex_);
  for (Entry& e : lru_)
    if (e.serial > since && e.turn.end_tokens == 0) {
      e.turn.end_tokens = end_tokens;
      e.turn.end_hash = end_hash;
    }
}

std::string ContractStore::serialize() const {
  std::lock_guard lock(mutex_);
  return image_locked([](const TurnContract&) { return true; });
}

std::string ContractStore::serialize_if(const std::function<bool(uint64_t, uint64_t)>& within) const {
  std::lock_guard lock(mutex_);
  return image_locked([&](const TurnContract& t) { return t.end_tokens != 0 && within(t.end_tokens, t.end_hash); });
}

std::string ContractStore::image_locked(const std::function<bool(const TurnContract&)>& keep) const {
  std::string out;
  out.append(kMagic);
  put_u32(out, kVersion);
  const size_t count_at = out.size();
  put_u32(out, 0);
  uint32_t count = 0;
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    const TurnContract& t = it->turn;
    if (!keep(t)) continue;
    ++count;
    put_u64(out, t.fingerprint);
    out.push_back(t.reasoning ? 1 : 0);
    put_str(out, t.reasoning ? *t.reasoning : std::string_view{});
    put_str(out, t.content);
    put_str(out, t.dsml_block);
    put_u32(out, static_cast<uint32_t>(t.calls.size()));
    for (const auto& call : t.calls) {
      put_str(out, call.id);
      put_str(out, call.name);
      put_str(out, call.arguments_json);
    }
    put_u64(out, t.end_tokens);
    put_u64(out, t.end_hash);
  }
  for (int i = 0; i < 4; ++i) out[count_at + i] = static_cast<char>((count >> (8 * i)) & 0xff);
  put_u64(out, fnv1a64(out));
  return out;
}

void ContractStore::deserialize(std::string_view image) { load_image(image, true); }
void ContractStore::merge(std::string_view image) { load_image(image, false); }

void ContractStore::load_image(std::string_view image, bool replace) {
  if (image.size() < kMagic.size() + 8 + 8)
    throw ContractStoreError("contract store image too short (" + std::to_string(image.size()) + " bytes)");
  if (image.substr(0, kMagic.size()) != kMagic) throw ContractStoreError("contract store image: bad magic");
  std::string_view body = image.substr(0, image.size() - 8);
  Reader trailer(image.substr(image.size() - 8));
  if (trailer.u(8, "checksum") != fnv1a64(body))
    throw ContractStoreError("contract store image: checksum mismatch (corrupted or truncated)");

  Reader r(body);
  for (size_t i = 0; i < kMagic.size(); ++i) r.u(1, "magic");
  auto version = static_cast<uint32_t>(r.u(4, "version"));
  if (version < kOldestVersion || version > kVersion)
    throw ContractStoreError("contract store image: unsupported version " + std::to_string(version));
  auto count = static_cast<uint32_t>(r.u(4, "turn count"));
  std::vector<TurnContract> turns;
  for (uint32_t i = 0; i < count; ++i) {
    TurnContract t;
    t.fingerprint = r.u(8, "fingerprint");
    auto has_reasoning = r.u(1, "reasoning flag");
    if (has_reasoning > 1)
      throw ContractStoreError("contract store image: bad reasoning flag at byte " + std::to_string(r.pos() - 1));
    std::string reasoning = r.str("reasoning");
    if (has_reasoning) t.reasoning = std::move(reasoning);
    t.content = r.str("content");
    t.dsml_block = r.str("dsml block");
    auto calls = static_cast<uint32_t>(r.u(4, "call count"));
    if (calls > r.remaining() / 12)
      throw ContractStoreError("contract store image: call count " + std::to_string(calls) + " exceeds image at byte " +
                               std::to_string(r.pos()));
    for (uint32_t c = 0; c < calls; ++c) {
      CallContract call;
      call.id = r.str("call id");
      call.name = r.str("call name");
      call.arguments_json = r.str("call arguments");
      t.calls.push_back(std::move(call));
    }
    if (version >= 2) {
      t.end_tokens = r.u(8, "end tokens");
      t.end_hash = r.u(8, "end hash");
    }
    turns.push_back(std::move(t));
  }
  if (r.remaining() != 0)
    throw ContractStoreError("contract store image: " + std::to_string(r.remaining()) + " trailing bytes");

  std::lock_guard lock(mutex_);
  if (replace) {
    lru_.clear();
    by_id_.clear();
    by_fingerprint_.clear();
    bytes_ = 0;
  }
  for (auto& t : turns) insert_locked(std::move(t));  // least recent first: ends most recent at front
  if (!replace) evict_locked();
}

}  // namespace ds4::protocol
