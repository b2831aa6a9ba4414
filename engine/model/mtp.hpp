#pragma once
// ds4::MtpModel / ds4::MtpDrafter: the DS4 multi-token-prediction block as a drafter for exact
// speculative decoding (docs/speculation.md §mtp). The block reads the target's final
// hyper-connection state after position n-1 and the embedding of the token x_n about to be
// appended, and predicts x_{n+1}; fed its own output state and draft it predicts further.
//
// An MtpModel is immutable and shared: the sidecar GGUF's mapped weights, bound to a base Model
// whose token embedding and output head it reuses, and the scratch of a draft's steps, which it
// lends to one draft() at a time (docs/memory.md §scratch). An MtpDrafter is one sequence's
// drafting state (the block's own raw KV rows) and is used by one thread, beside one Context.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model/model.hpp"

namespace ds4 {

class MtpModel {
 public:
  // Maps `sidecar`, checks that it belongs to `base` (gguf::check_sidecar_binding) and binds
  // every tensor by name, type and shape. Throws std::runtime_error naming the file and the
  // reason (missing or mistyped tensor, another model's sidecar).
  static std::shared_ptr<const MtpModel> load(const std::filesystem::path& sidecar, std::shared_ptr<const Model> base,
                                              const std::filesystem::path& base_path);
  ~MtpModel();
  MtpModel(const MtpModel&) = delete;
  MtpModel& operator=(const MtpModel&) = delete;

  const Model& base() const;
  // How many recent positions' final states a target Context must keep
  // (ContextOptions::keep_hidden) for drafts that read as far back as the block attends.
  uint32_t hidden_reach() const;
  uint64_t weight_bytes() const;
  // Where the block runs, one sentence for the log: on the CPU, or (a base model loaded for the
  // CUDA device) on the device with its weights' placement, or on the CPU where they do not fit.
  const std::string& placement() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit MtpModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class MtpDrafter {
 public:
  explicit MtpDrafter(std::shared_ptr<const MtpModel> mtp);
  ~MtpDrafter();
  MtpDrafter(MtpDrafter&&) noexcept;
  MtpDrafter& operator=(MtpDrafter&&) noexcept;

  // Up to k greedy drafts for the tokens that follow `next`, the token about to be appended to
  // `target` at position target.size(). Catches the block up on the positions the target
  // committed since the last call (as far as the target kept their final states), then drafts
  // recursively; the draft rows are taken back before returning, so only committed positions
  // stay in the block's state. Returns fewer (or none) when the target keeps no final state for
  // its last position (ContextOptions::keep_hidden 0, or just restored) or k is 0.
  std::vector<int32_t> draft(const Context& target, int32_t next, size_t k);
  // Forgets every row (the next draft() catches up from scratch).
  void reset();
  // The logits of the last draft() step (empty before any): what the last draft was the argmax
  // of. Valid until the next call.
  std::span<const float> last_logits() const;

  struct State;

 private:
  std::shared_ptr<const MtpModel> mtp_;
  std::unique_ptr<State> state_;
};

}  // namespace ds4
