// The contract store: what the gateway remembers about the assistant turns it generated, so a
// later request that replays the conversation renders byte-identical to what the model produced
// (and what the KV cache holds), and clients that break that contract are told precisely how.
//
// Turns are found by tool-call id, else by a fingerprint of the prompting segment and the content;
// the store is a byte-bounded, thread-safe LRU. serialize()/deserialize() make a checksummed image
// for KV checkpoints; malformed input throws ContractStoreError and leaves the store unchanged.
// What is kept and how turns are recognised: docs/chat-format.md §the-contract-store; the modes
// and violations: docs/chat-format.md §echo-contracts, §contract-checks.
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
