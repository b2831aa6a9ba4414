#pragma once
// EngineBackend: the narrow face of a loaded model that the serving layer drives.
//
// The gateway talks to the engine in tokens only: prompt tokens go in, sampled tokens (and their
// bytes) come out. This interface is that boundary. Ds4Backend (ds4_backend.hpp) implements it on
// ds4::Model + ds4::Context + the tokenizer and sampler; the tests implement it with a scripted
// fake so that queueing, cancellation and timeouts can be checked without a model, and a later
// remote raw-completion engine could implement it over the network.
//
// Threading: the metadata and text methods are const and thread-safe (HTTP threads tokenize);
// an EngineSequence is owned and used by the engine worker thread alone.
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ds4::serving {

using Token = int32_t;

// What an engine throws when it can run nothing more in this process (its GPU failed in a way the
// device context does not survive). The service then takes no more work and says why, and the
// daemon exits so that systemd starts it afresh (docs/cuda.md §device-lost).
class EngineLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One token sequence with its KV state; logits are always those after the last token.
class EngineSequence {
 public:
  virtual ~EngineSequence() = default;
  virtual const std::vector<Token>& tokens() const = 0;
  virtual size_t capacity() const = 0;
  // Back to an empty sequence.
  virtual void clear() = 0;
  // Appends tokens (prefill for several, decode for one). Throws on engine errors.
  virtual void append(std::span<const Token> tokens) = 0;
  // The next-token logits after the last appended token (empty before the first append, and
  // possibly after truncate()).
  virtual std::span<const float> logits() const = 0;
  // Appends tokens and returns the logits after each of them, which must equal appending them
  // one at a time (exact speculative decoding checks drafts with them; the engine does it in one
  // forward). The default appends them one at a time.
  virtual std::vector<std::vector<float>> verify(std::span<const Token> tokens) {
    std::vector<std::vector<float>> out;
    for (const Token& t : tokens) {
      append(std::span<const Token>(&t, 1));
      out.emplace_back(logits().begin(), logits().end());
    }
    return out;
  }

  // Restore points (the prefix cache uses them; a sequence without them is only ever extended
  // or cleared). truncate(n) takes the sequence back to its first n tokens, bit-identically to
  // one that only saw those, for truncate_floor() <= n <= size (the engine's rollback rings).
  virtual size_t truncate_floor() const { return tokens().size(); }
  // How many tokens may be appended and then taken back to the current size (0: none).
  virtual size_t rollback_room() const { return 0; }
  virtual void truncate(size_t n) {
    if (n != tokens().size()) throw std::logic_error("this engine sequence cannot truncate");
  }
  // Up to k drafts from the model's own draft head (an MTP block) for the tokens after `next`,
  // which is appended next; none when the backend has no draft head or no state to draft from.
  virtual std::vector<Token> model_draft(Token /*next*/, size_t /*k*/) { return {}; }
  // The whole state as bytes (self-checking) and back; restore() throws with the reason and
  // leaves the sequence untouched on a bad image. Empty snapshot(): not supported.
  virtual std::vector<uint8_t> snapshot() const { return {}; }
  virtual void restore(std::span<const uint8_t> /*state*/) {
    throw std::logic_error("this engine sequence cannot restore snapshots");
  }
};

// One sequence's part of a batched step (EngineBackend::step): its tokens are appended, as
// append() would, or verified, as verify() would (all_logits).
struct StepEntry {
  EngineSequence* sequence = nullptr;  // at most one entry per sequence in a step
  std::span<const Token> tokens;       // at least one
  bool all_logits = false;
  std::vector<std::vector<float>> row_logits;  // out, all_logits entries: verify()'s result
  std::exception_ptr error;                    // out: this entry failed (what append/verify threw)
};

class EngineBackend {
 public:
  virtual ~EngineBackend() = default;
  virtual std::string model_id() const = 0;
  virtual size_t context_length() const = 0;
  virtual size_t vocab_size() const = 0;
  // Special-token strings become control tokens (for rendered prompts).
  virtual std::vector<Token> encode(std::string_view text) const = 0;
  // Plain BPE: special-token strings stay text (for client text counted on its own).
  virtual std::vector<Token> encode_plain(std::string_view text) const = 0;
  // A rendered prompt: special strings become control tokens only outside `plain` (sorted,
  // disjoint byte ranges of `text` holding client text), so client bytes never yield a control
  // token; otherwise exactly encode(text) (docs/chat-format.md §client-text-is-plain).
  virtual std::vector<Token> encode_prompt(std::string_view text,
                                           std::span<const std::pair<size_t, size_t>> plain) const = 0;
  // Throws std::out_of_range for an id outside the vocabulary.
  virtual std::string decode(std::span<const Token> tokens) const = 0;
  virtual std::string token_bytes(Token token) const = 0;
  // EOS (and any other token that ends a turn for good).
  virtual bool is_end_of_generation(Token token) const = 0;
  // Identifies the model (weights layout and tokenizer) for checkpoints; 0: unknown, checkpoints
  // are not kept.
  virtual uint64_t fingerprint() const { return 0; }
  // A live sequence (one per session the worker runs at once); the first call may hand over one
  // made at load time. Called by one thread at a time (the Service's slots take turns): an
  // implementation need not lock.
  virtual std::unique_ptr<EngineSequence> new_sequence() = 0;
  // Runs every entry (sequences of this backend), each ending exactly as if it had been run
  // alone, and records a failure in its entry instead of throwing. The default runs them one by
  // one; the engine runs them in one forward pass (ds4::BatchStep). docs/batching.md §scheduler.
  virtual void step(std::span<StepEntry> entries);
};

}  // namespace ds4::serving
