#pragma once
// Context::State: everything one sequence owns (internal to engine/model).
#include <cstdint>
#include <vector>

#include "engine/model/forward.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/model/model.hpp"

namespace ds4 {

struct Context::State {
  uint32_t capacity = 0, rollback = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // after the last token; empty when no tokens
  // Logits of recent positions (ring of rollback + 1 slots, tagged by position), for truncate.
  std::vector<float> logit_ring;
  std::vector<int64_t> logit_pos;
  uint64_t rollback_floor = 0;  // truncate() cannot go below this (last restore point)
  uint64_t high_water = 0;      // furthest size reached since then: rings hold its last tokens
  std::vector<model::LayerState> layers;
  model::HiddenRing hidden;  // final HC states of recent positions (ContextOptions::keep_hidden)
  model::ForwardScratch scratch;
};

namespace model {
// Records logits computed for position pos in the rollback ring.
void remember_logits(Context::State& st, uint32_t n_vocab, uint64_t pos, const float* logits);
std::vector<uint8_t> write_snapshot(const Model::Impl& m, const Context::State& st);
// Parses and validates a snapshot into a fresh state of the given capacity; throws on error.
void read_snapshot(const Model::Impl& m, std::span<const uint8_t> bytes, uint32_t capacity, uint32_t rollback,
                   Context::State& out);
}  // namespace model

}  // namespace ds4
