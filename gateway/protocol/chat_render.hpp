// render_chat: a ChatRequest -> the exact DS4 prompt text, as antirez/ds4's server renders it.
//
//   <｜begin▁of▁sentence｜> [MAX PREFIX] SYSTEM { TURN } [<｜Assistant｜> (<think> | </think>)]
//
// Tool schemas are written one per line as compact JSON in the client's key order (ds4 writes
// the client's raw bytes; we receive parsed JSON, so whitespace is normalised and numbers are
// written in shortest decimal form).
// SYSTEM is the tools block (when tools are active) followed by every system/developer message,
// hoisted from wherever it appears, joined with "\n\n". A user message opens <｜User｜>; a run of
// tool messages shares one <｜User｜> and each is <tool_result>…</tool_result> (a literal
// "</tool_result>" inside is written "&lt;/tool_result>"). An assistant message right after a
// user/tool message opens <｜Assistant｜> plus its think part; back-to-back assistant messages
// are concatenated; each ends with content + DSML tool calls + <｜end▁of▁sentence｜>.
// Think part: Off -> "</think>"; High/Max -> "<think>reasoning</think>" when the conversation has
// tool context (active tools, assistant tool calls or tool messages) or the assistant message
// comes after the last user/tool message, otherwise "</think>" (old reasoning dropped).
//
// Replay (the point of the contract store): for an assistant message whose tool-call ids are all
// known and belong to one stored turn, the exact sampled DSML block of that turn is written at
// that message's position (lookup by id at render time; never by position, never by searching
// the rendered text). Otherwise the calls are rendered canonically (dsml_format.hpp).
//
// Contract checks (mode Warn or Strict) per assistant message that we recognise as ours (by id,
// else by fingerprint, see contract_store.hpp):
//  * unknown_tool_call_id: an id in our format (call_ + 32 hex) that the store does not know
//    (evicted, or from before a restart without checkpoint). Rendered canonically.
//  * arguments_changed: the client's arguments differ (as JSON values; key order and
//    whitespace do not matter) from what we reported. Rendered canonically from the client's.
//  * reasoning_missing: the turn had reasoning, the render keeps reasoning for this message,
//    and the client sent none. Warn repairs it with the stored bytes.
//  * reasoning_changed: the client sent different reasoning. Rendered as the client sent it.
// Warn also restores reasoning the template would drop (tool-less thinking chats, turns before
// the last user message) for turns we recognise: not a violation (clients are told to drop it),
// but the cache holds it, so restoring it is what makes those turns prefix-cache hits.
// In Off mode no checks run and client text is rendered as sent (DSML replay by id still on).
//
// Client text is plain text (docs/chat-format.md §client-text-is-plain): every byte the client
// sent is in plain_spans, and the server tokenizes special strings as control tokens only outside
// them; the template's own strings and the bytes replayed from the contract store (the model's
// sampled DSML and reasoning) keep theirs.
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
