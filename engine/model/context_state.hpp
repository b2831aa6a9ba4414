#pragma once
// Context::State: everything one sequence owns (internal to engine/model).
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/model/device/device_forward.hpp"
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
  // On the CPU, the sequence's attention state. On the device (a Cuda model), `device` holds it and
  // `layers` is its host mirror: the base states and, during a rollback, the counters and history
  // (docs/cuda.md §rollback); its KV rows are stale and its compressed rows are not kept.
  std::vector<model::LayerState> layers;
  std::unique_ptr<model::device::DeviceForward> device;
  model::HiddenRing hidden;  // final HC states of recent positions (ContextOptions::keep_hidden)
};

namespace model {
// Appends tokens[0..T) to st's sequence state on its device (the CPU or the GPU) at position
// st.tokens.size(), without touching st.tokens: logits of every row (T x n_vocab) when all_logits,
// else of the last; the hidden ring filled for those positions. Throws as forward_batch does.
void state_forward(const Model::Impl& m, Context::State& st, const int32_t* tokens, int T, bool all_logits,
                   float* logits, const std::function<void(uint32_t)>& on_layer = {});
// Records logits computed for position pos in the rollback ring.
void remember_logits(Context::State& st, uint32_t n_vocab, uint64_t pos, const float* logits);
std::vector<uint8_t> write_snapshot(const Model::Impl& m, const Context::State& st);
// Parses and validates a snapshot into a fresh state of the given capacity; throws on error.
void read_snapshot(const Model::Impl& m, std::span<const uint8_t> bytes, uint32_t capacity, uint32_t rollback,
                   Context::State& out);
}  // namespace model

}  // namespace ds4
