// The contract store: what the gateway remembers about the assistant turns it generated, so a
// later request that replays the conversation can be rendered byte-identical to what the model
// actually produced (and what the KV cache holds), and so clients that break that contract are
// told precisely how.
//
// Per generated turn we keep: the exact sampled reasoning bytes, the content we reported, the
// exact sampled DSML block, and for each tool call the id we issued plus the canonical
// arguments JSON we reported (to detect a client that changed the arguments).
//
// How a replayed assistant message is recognised as "a turn we generated":
//  1. Tool-call ids. We issue every id (call_ + 32 random hex), so an id found in the store
//     identifies the turn with certainty. This is the primary key.
//  2. A fingerprint for turns without tool calls: 64-bit FNV-1a over (anchor, content), where
//     the anchor is the hash of the rendered user/tool segment that prompted the turn (the
//     bytes from the first <｜User｜> after the previous assistant turn up to, not including,
//     <｜Assistant｜>). The renderer computes the anchor both for the generation prompt
//     (RenderResult::turn_anchor) and for each replayed assistant message, so the same
//     question + the same answer map to the same turn, while a common answer ("OK") to a
//     different question does not.
// Lookups touch the LRU order. The store is bounded by bytes (sum of stored strings plus a fixed
// per-entry overhead) and evicts least recently used turns first; it is thread-safe.
//
// Contract modes: Off (no checks; DSML replay by id still used), Warn (default: check, repair
// what can be repaired, report violations), Strict (check; the HTTP layer answers 422 when the
// render reports violations). What each violation means and what Warn renders is described in
// chat_render.hpp.
//
// serialize()/deserialize(): a versioned, checksummed byte image for KV checkpoints. Any
// malformed input throws ContractStoreError and leaves the store unchanged. A checkpoint stores
// only the turns that lie within its tokens (serialize_if over TurnContract::end_*), so each
// checkpoint carries its own conversation's records and merging them back restores them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/protocol/parsed_message.hpp"

namespace ds4::protocol {

enum class ContractMode { Off, Warn, Strict };
const char* contract_mode_name(ContractMode mode);
std::optional<ContractMode> parse_contract_mode(std::string_view name);  // "off","warn","strict"

enum class ViolationKind { ReasoningMissing, ReasoningChanged, UnknownToolCallId, ArgumentsChanged };
const char* violation_kind_name(ViolationKind kind);  // "reasoning_missing", ...

struct ContractViolation {
  size_t message_index = 0;  // index into ChatRequest::messages
  ViolationKind kind = ViolationKind::ReasoningMissing;
  std::string detail;    // what differs, e.g. which tool call id
  std::string fix_hint;  // what the client should do instead
};

struct CallContract {
  std::string id;
  std::string name;
  std::string arguments_json;  // the canonical arguments we reported to the client
};

struct TurnContract {
  uint64_t fingerprint = 0;              // turn_fingerprint(anchor, content)
  std::optional<std::string> reasoning;  // exact sampled reasoning bytes
  std::string content;                   // the content we reported
  std::string dsml_block;                // exact sampled DSML block; empty when no calls
  std::vector<CallContract> calls;
  // Where the turn ends in the engine's token stream: the token count there and a hash of the
  // tokens up to it (cache::prefix_hashes). Set by the serving layer (place_new_turns); 0 when
  // unknown. A KV checkpoint carries exactly the turns whose end lies within its tokens.
  uint64_t end_tokens = 0;
  uint64_t end_hash = 0;
};

uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ULL);
uint64_t turn_fingerprint(uint64_t anchor, std::string_view content);

// Builds the contract of a finished turn. Only Complete tool-call blocks are remembered as
// replayable; other statuses keep reasoning and content only.
TurnContract make_turn_contract(uint64_t anchor, const ParsedMessage& message);

struct ContractStoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ContractStore {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;
  static constexpr size_t kEntryOverheadBytes = 128;  // counted per turn and per call id

  explicit ContractStore(size_t max_bytes = kDefaultMaxBytes);
  ContractStore(const ContractStore&) = delete;
  ContractStore& operator=(const ContractStore&) = delete;

  // Lookups are const for callers but move the turn to the front of the LRU order.
  // Adds (or replaces, when an id or fingerprint is already known) a turn; evicts LRU turns
  // while over budget. A single turn larger than the budget is not stored.
  void remember(TurnContract turn);

  std::optional<TurnContract> find_by_tool_call_id(std::string_view id) const;
  std::optional<TurnContract> find_by_fingerprint(uint64_t fingerprint) const;

  size_t bytes() const;  // memory counted for the budget
  size_t size() const;   // number of turns
  size_t max_bytes() const;

  // A counter that grows with every remember(): note it before handing a finished generation to
  // its sink, then place_new_turns(noted, ...) locates the turns remembered meanwhile.
  uint64_t remembered() const;
  // Sets where the turns remembered after `since` (and not yet placed) end in the token stream.
  void place_new_turns(uint64_t since, uint64_t end_tokens, uint64_t end_hash);

  std::string serialize() const;
  // The image of the placed turns for which within(end_tokens, end_hash) is true: a checkpoint's
  // own turns, so its contract section does not grow with unrelated conversations.
  std::string serialize_if(const std::function<bool(uint64_t end_tokens, uint64_t end_hash)>& within) const;
  // Replaces the whole content with the image's turns (LRU order preserved). Throws
  // ContractStoreError on a bad magic, unknown version, truncation, bad lengths or checksum.
  void deserialize(std::string_view image);
  // Adds the image's turns to the present ones (a turn already known is replaced), as the
  // newest; evicts LRU turns while over budget. Same errors as deserialize().
  void merge(std::string_view image);

 private:
  struct Entry {
    TurnContract turn;
    size_t cost = 0;
    uint64_t serial = 0;  // remembered() when it was inserted
  };
  using List = std::list<Entry>;
  void load_image(std::string_view image, bool replace);
  void evict_locked();
  void erase_locked(List::iterator it);
  void insert_locked(TurnContract turn);
  static size_t cost(const TurnContract& turn);

  std::string image_locked(const std::function<bool(const TurnContract&)>& keep) const;

  mutable std::mutex mutex_;
  size_t max_bytes_;
  uint64_t serial_ = 0;
  size_t bytes_ = 0;
  mutable List lru_;  // front = most recently used
  std::unordered_map<std::string, List::iterator> by_id_;
  std::unordered_map<uint64_t, List::iterator> by_fingerprint_;
};

}  // namespace ds4::protocol
