// Context: one token sequence over a shared Model. Prefill runs layer-major in chunks (so the
// activations of a long prompt stay bounded) and verify returns every row's logits; both go
// through forward_batch, whose results do not depend on batching, so they equal decode.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/model/context_state.hpp"
#include "engine/model/model_impl.hpp"

namespace ds4 {
namespace {

constexpr int kChunk = 256;  // tokens per layer-major pass

uint32_t resolve_capacity(const Model& m, const ContextOptions& o) {
  if (o.context_length) return o.context_length;
  const uint64_t meta = m.info().context_length;
  return uint32_t(std::min<uint64_t>(meta ? meta : 65536, 65536));
}

}  // namespace

Context::Context(std::shared_ptr<const Model> model, ContextOptions options)
    : model_(std::move(model)), state_(std::make_unique<State>()) {
  if (!model_) throw std::invalid_argument("Context needs a model");
  state_->capacity = resolve_capacity(*model_, options);
  state_->rollback = std::min(options.rollback, state_->capacity);
  const Model::Impl& m = model_->impl();
  state_->layers = model::make_layer_states(m.cfg, state_->capacity, state_->rollback);
  if (m.device) state_->device = std::make_unique<model::device::DeviceForward>(m, *m.device_scratch, state_->layers);
  if (options.keep_hidden)
    state_->hidden.init(model_->impl().cfg.hc_dim(),
                        std::min(options.keep_hidden, state_->capacity) + state_->rollback);
}

Context::~Context() = default;
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;

const Model& Context::model() const { return *model_; }
std::span<const float> Context::logits() const { return state_->logits; }
const std::vector<int32_t>& Context::tokens() const { return state_->tokens; }

std::span<const float> Context::hidden(size_t pos) const {
  const model::HiddenRing& r = state_->hidden;
  const float* h = pos < state_->tokens.size() ? r.find(pos) : nullptr;
  return h ? std::span<const float>(h, r.dim) : std::span<const float>();
}
size_t Context::size() const { return state_->tokens.size(); }
uint32_t Context::capacity() const { return state_->capacity; }

uint64_t Context::cache_bytes() const {
  uint64_t b = 0;
  for (const auto& l : state_->layers) b += l.bytes();
  if (state_->device) b += state_->device->state_bytes();
  b += state_->hidden.data.capacity() * sizeof(float);
  return b + state_->logits.capacity() * sizeof(float) + state_->tokens.capacity() * sizeof(int32_t);
}

void Context::reset() {
  state_->tokens.clear();
  state_->logits.clear();
  std::fill(state_->logit_pos.begin(), state_->logit_pos.end(), -1);
  state_->rollback_floor = 0;
  state_->high_water = 0;
  state_->hidden.clear();
  for (auto& l : state_->layers) l.reset();
  if (state_->device) state_->device->upload_state(state_->layers);
}

namespace model {

void state_forward(const Model::Impl& m, Context::State& st, const int32_t* tokens, int T, bool all_logits,
                   float* logits, const std::function<void(uint32_t)>& on_layer) {
  const uint32_t pos0 = uint32_t(st.tokens.size());
  if (st.device) st.device->forward(tokens, T, pos0, all_logits, logits, &st.hidden, on_layer);
  else forward_batch(m, st.layers, tokens, T, pos0, all_logits, logits, *m.cpu_scratch.take(), on_layer, &st.hidden);
}

void remember_logits(Context::State& st, uint32_t n_vocab, uint64_t pos, const float* logits) {
  if (st.rollback == 0) return;
  const size_t slots = size_t(st.rollback) + 1;
  if (st.logit_pos.size() != slots) {
    st.logit_pos.assign(slots, -1);
    st.logit_ring.resize(slots * n_vocab);
  }
  const size_t slot = size_t(pos % slots);
  std::copy(logits, logits + n_vocab, st.logit_ring.begin() + slot * n_vocab);
  st.logit_pos[slot] = int64_t(pos);
}

}  // namespace model

void Context::truncate(size_t n) {
  State& s = *state_;
  const size_t size = s.tokens.size();
  if (n > size)
    throw std::out_of_range("truncate to " + std::to_string(n) + " tokens: the context holds only " +
                            std::to_string(size));
  if (n == size) return;
  if (n + s.rollback < s.high_water)
    throw std::out_of_range("truncate to " + std::to_string(n) + " tokens: only the last " +
                            std::to_string(s.rollback) + " tokens before the furthest point reached (" +
                            std::to_string(s.high_water) + ") can be taken back");
  if (n < s.rollback_floor)
    throw std::out_of_range("truncate to " + std::to_string(n) + " tokens: cannot go behind the last restore point (" +
                            std::to_string(s.rollback_floor) + ")");
  // Both throw before changing anything.
  if (s.device) s.device->truncate(s.layers, size, n);
  else model::truncate_layer_states(model_->impl(), s.layers, size, n);
  s.tokens.resize(n);
  const uint32_t V = model_->impl().cfg.n_vocab;
  const size_t slots = s.logit_pos.size();
  if (n > 0 && slots && s.logit_pos[(n - 1) % slots] == int64_t(n - 1))
    s.logits.assign(s.logit_ring.begin() + ((n - 1) % slots) * V, s.logit_ring.begin() + ((n - 1) % slots + 1) * V);
  else s.logits.clear();
}

size_t Context::truncate_floor() const {
  const State& s = *state_;
  const uint64_t ring = s.high_water > s.rollback ? s.high_water - s.rollback : 0;
  return size_t(std::min<uint64_t>(s.tokens.size(), std::max<uint64_t>(ring, s.rollback_floor)));
}

size_t Context::rollback_room() const {
  const State& s = *state_;
  const uint64_t n = s.tokens.size();
  // After k more tokens the floor is max(max(high_water, n + k) - rollback, rollback_floor).
  if (s.rollback_floor > n || s.high_water > n + s.rollback) return 0;
  return s.rollback;
}

std::span<const float> Context::prefill(std::span<const int32_t> tokens, ProgressFn progress) {
  if (tokens.empty()) return logits();
  State& s = *state_;
  if (s.tokens.size() + tokens.size() > s.capacity)
    throw std::length_error("prefill of " + std::to_string(tokens.size()) + " tokens exceeds the context capacity (" +
                            std::to_string(s.tokens.size()) + " of " + std::to_string(s.capacity) + " used)");
  const Model::Impl& m = model_->impl();
  const uint32_t V = m.cfg.n_vocab, L = m.cfg.n_layer;
  s.logits.resize(V);
  const size_t n = tokens.size();
  const size_t n_chunks = (n + kChunk - 1) / kChunk;
  for (size_t c = 0; c < n_chunks; c++) {
    const size_t b = c * kChunk, e = std::min(n, b + kChunk);
    std::function<void(uint32_t)> on_layer;
    if (progress)
      on_layer = [&](uint32_t il) { progress((double(c) + double(il + 1) / L) / double(n_chunks), "prefill"); };
    model::state_forward(m, s, tokens.data() + b, int(e - b), false, s.logits.data(), on_layer);
    s.tokens.insert(s.tokens.end(), tokens.begin() + b, tokens.begin() + e);
  }
  model::remember_logits(s, V, s.tokens.size() - 1, s.logits.data());
  s.high_water = std::max<uint64_t>(s.high_water, s.tokens.size());
  return s.logits;
}

std::span<const float> Context::decode(int32_t token) { return prefill(std::span<const int32_t>(&token, 1)); }

std::vector<std::vector<float>> Context::verify(std::span<const int32_t> tokens) {
  State& s = *state_;
  if (s.tokens.size() + tokens.size() > s.capacity)
    throw std::length_error("verify of " + std::to_string(tokens.size()) + " tokens exceeds the context capacity");
  const Model::Impl& m = model_->impl();
  const uint32_t V = m.cfg.n_vocab;
  std::vector<std::vector<float>> out;
  std::vector<float> all;
  for (size_t b = 0; b < tokens.size(); b += kChunk) {
    const size_t e = std::min(tokens.size(), b + kChunk);
    all.resize((e - b) * V);
    model::state_forward(m, s, tokens.data() + b, int(e - b), true, all.data());
    s.tokens.insert(s.tokens.end(), tokens.begin() + b, tokens.begin() + e);
    for (size_t t = 0; t < e - b; t++) {
      out.emplace_back(all.begin() + t * V, all.begin() + (t + 1) * V);
      model::remember_logits(s, V, s.tokens.size() - (e - b) + t, out.back().data());
    }
  }
  if (!out.empty()) s.logits = out.back();
  s.high_water = std::max<uint64_t>(s.high_water, s.tokens.size());
  return out;
}

std::vector<uint8_t> Context::snapshot() const {
  State& s = *state_;
  if (!s.device) return model::write_snapshot(model_->impl(), s);
  // The device's rows into a copy of the mirror (whose compressed rows are empty: a cheap copy),
  // written, then dropped, so the host holds them only while the snapshot is written.
  std::vector<model::LayerState> rows = s.layers;
  s.device->download_state(rows);
  std::swap(rows, s.layers);
  std::vector<uint8_t> out;
  try {
    out = model::write_snapshot(model_->impl(), s);
  } catch (...) {
    std::swap(rows, s.layers);
    throw;
  }
  std::swap(rows, s.layers);
  return out;
}

void Context::restore(std::span<const uint8_t> bytes) {
  auto fresh = std::make_unique<State>();
  fresh->capacity = state_->capacity;
  fresh->rollback = state_->rollback;
  if (state_->hidden.slots) fresh->hidden.init(state_->hidden.dim, state_->hidden.slots);
  model::read_snapshot(model_->impl(), bytes, state_->capacity, state_->rollback, *fresh);
  if (state_->device) {
    // Nothing on the device changes unless the snapshot parsed; the host mirror keeps no rows.
    fresh->device = std::move(state_->device);
    try {
      fresh->device->upload_state(fresh->layers);
    } catch (...) {
      state_->device = std::move(fresh->device);
      throw;
    }
    for (auto& l : fresh->layers) {
      l.comp.data = {};
      l.index_comp.data = {};
    }
  }
  fresh->rollback_floor = fresh->high_water = fresh->tokens.size();
  if (!fresh->tokens.empty())
    model::remember_logits(*fresh, model_->impl().cfg.n_vocab, fresh->tokens.size() - 1, fresh->logits.data());
  state_ = std::move(fresh);
}

}  // namespace ds4
