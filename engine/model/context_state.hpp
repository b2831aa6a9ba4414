#pragma once
// Context::State: everything one sequence owns (internal to engine/model).
#include <cstdint>
#include <vector>

#include "engine/model/forward.hpp"
#include "engine/model/kv_state.hpp"
#include "engine/model/model.hpp"

namespace ds4 {

struct Context::State {
  uint32_t capacity = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // after the last token; empty when no tokens
  std::vector<model::LayerState> layers;
  model::ForwardScratch scratch;
};

namespace model {
std::vector<uint8_t> write_snapshot(const Model::Impl& m, const Context::State& st);
// Parses and validates a snapshot into a fresh state of the given capacity; throws on error.
void read_snapshot(const Model::Impl& m, std::span<const uint8_t> bytes, uint32_t capacity, Context::State& out);
}  // namespace model

}  // namespace ds4
