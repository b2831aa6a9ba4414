// render_chat: a ChatRequest -> the exact DS4 prompt text, as antirez/ds4's server renders it.
//
// The template, the think part and the tools block:
// docs/chat-format.md §rendering, §thinking-modes, §tools-block. Assistant turns the contract
// store knows are replayed with their exact sampled DSML block, looked up by tool-call id at
// render time; in warn/strict mode each turn we recognise is checked
// (docs/chat-format.md §contract-checks). Client text is plain text
// (docs/chat-format.md §client-text-is-plain): every byte the client sent is in plain_spans, and
// the server tokenizes special strings as control tokens only outside them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gateway/protocol/chat_request.hpp"
#include "gateway/protocol/contract_store.hpp"

namespace ds4::protocol {

inline constexpr size_t kThinkMaxMinContext = 393216;  // Think Max needs at least this context

struct RenderOptions {
  size_t context_length = 0;  // engine context in tokens; Max thinking needs >= 393216
  bool exact_replay = true;   // false forces canonical DSML for every call (debugging)
};

struct RenderResult {
  std::string text;  // full DS4 prompt
  // Sorted, non-overlapping byte ranges [begin, end) of `text` that are the client's own text
  // (system/user/tool content, assistant content and reasoning, tool-call argument values,
  // tool schemas), so the server can count protocol tokens as the rest.
  std::vector<std::pair<size_t, size_t>> client_spans;
  // Sorted, non-overlapping byte ranges of `text` that came from the client (its client spans,
  // plus tool names and parameter keys of canonically rendered calls; not the bytes replayed
  // from the contract store): the prompt is tokenized with special strings as control tokens
  // only outside them (EngineBackend::encode_prompt, docs/chat-format.md §client-text-is-plain).
  std::vector<std::pair<size_t, size_t>> plain_spans;
  std::vector<ContractViolation> violations;
  Thinking thinking = Thinking::High;  // effective mode (Max may have been downgraded)
  bool tools_active = false;
  uint64_t turn_anchor = 0;       // anchor of the turn about to be generated (make_turn_contract)
  size_t replayed_blocks = 0;     // assistant messages rendered with exact sampled DSML
  size_t canonical_blocks = 0;    // assistant messages with calls rendered canonically
  size_t repaired_reasoning = 0;  // reasoning_missing repaired from the store
};

// Max needs kThinkMaxMinContext; below that it is High, as in ds4.
Thinking effective_thinking(Thinking requested, size_t context_length);

// `store` may be null (nothing known: canonical DSML, no checks).
RenderResult render_chat(const ChatRequest& request, const ContractStore* store, ContractMode mode,
                         const RenderOptions& options = {});

// The /v1/completions frame: prompt text = head + prompt + tail. Not raw:
//   head = BOS [MAX PREFIX] "You are a helpful assistant<｜User｜>",
//   tail = "<｜Assistant｜>" + ("<think>" | "</think>");
// the prompt is then client text (plain: its special strings stay text). raw: both empty and the
// prompt is tokenized with its special strings as control tokens (the caller writes the whole
// template). For token-id prompts the server tokenizes head and tail around the ids.
struct CompletionFrame {
  std::string head;
  std::string tail;
  Thinking thinking = Thinking::High;
};
CompletionFrame completion_frame(const CompletionRequest& request, const RenderOptions& options = {});

}  // namespace ds4::protocol
