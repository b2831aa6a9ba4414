// BatchStep: several contexts' new tokens as the rows of one forward_rows pass (a DevicePass for
// a model on the CUDA device); see
// batch_step.hpp and docs/batching.md. This file validates the entries, lays their tokens out as
// rows (each entry's rows consecutive, in entry order) and does each context's bookkeeping
// afterwards the way Context::prefill and Context::verify do it, so a context cannot tell a
// batched step from a solo one.
#include "engine/model/batch_step.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/model/context_state.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"

namespace ds4 {

struct BatchStep::Impl {
  std::vector<model::RowSlot> slots;
  std::vector<int32_t> tokens;
  std::vector<int> logit_rows;
  std::vector<float> logits;        // one n_vocab row per entry of logit_rows
  std::vector<size_t> first_logit;  // per entry: its first row in `logits`
  std::vector<size_t> kept;         // per entry: rows of logits row_logits() shows (0 or all)
  std::vector<model::device::SequenceRows> device_rows;
};

BatchStep::BatchStep(std::shared_ptr<const Model> model, uint32_t max_rows)
    : model_(std::move(model)), max_rows_(max_rows), impl_(std::make_unique<Impl>()) {
  if (!model_) throw std::invalid_argument("BatchStep needs a model");
  if (max_rows_ == 0) throw std::invalid_argument("BatchStep: max_rows must be at least 1");
}

BatchStep::~BatchStep() = default;

std::span<const float> BatchStep::row_logits(size_t entry) const {
  if (entry >= impl_->kept.size())
    throw std::out_of_range("BatchStep::row_logits: entry " + std::to_string(entry) + " of " +
                            std::to_string(impl_->kept.size()));
  const size_t V = model_->impl().cfg.n_vocab;
  return std::span<const float>(impl_->logits).subspan(impl_->first_logit[entry] * V, impl_->kept[entry] * V);
}

void BatchStep::run(std::span<const BatchEntry> entries) {
  Impl& b = *impl_;
  b.first_logit.clear();
  b.kept.clear();
  if (entries.empty()) return;
  const Model::Impl& m = model_->impl();
  const uint32_t V = m.cfg.n_vocab;

  // Everything that can be refused is checked before any context changes.
  size_t rows = 0;
  for (size_t i = 0; i < entries.size(); i++) {
    const BatchEntry& e = entries[i];
    const std::string what = "BatchStep entry " + std::to_string(i);
    if (!e.context) throw std::invalid_argument(what + " has no context");
    if (&e.context->model() != model_.get())
      throw std::invalid_argument(what + ": its context belongs to another model");
    if (e.tokens.empty()) throw std::invalid_argument(what + " has no tokens");
    for (size_t j = 0; j < i; j++)
      if (entries[j].context == e.context)
        throw std::invalid_argument(what + " repeats the context of entry " + std::to_string(j));
    const Context::State& s = *e.context->state_;
    if (s.tokens.size() + e.tokens.size() > s.capacity)
      throw std::length_error(what + ": " + std::to_string(e.tokens.size()) + " tokens exceed the context capacity (" +
                              std::to_string(s.tokens.size()) + " of " + std::to_string(s.capacity) + " used)");
    for (int32_t t : e.tokens)
      if (t < 0 || uint32_t(t) >= V)
        throw std::out_of_range(what + ": token id " + std::to_string(t) + " is outside the vocabulary (" +
                                std::to_string(V) + ")");
    rows += e.tokens.size();
  }
  if (rows > max_rows_)
    throw std::length_error("BatchStep: " + std::to_string(rows) + " tokens in one step exceed max_rows (" +
                            std::to_string(max_rows_) + ")");

  try {
    b.slots.clear();
    b.tokens.clear();
    b.logit_rows.clear();
    for (const BatchEntry& e : entries) {
      Context::State& s = *e.context->state_;
      const uint32_t pos0 = uint32_t(s.tokens.size());
      b.first_logit.push_back(b.logit_rows.size());
      b.kept.push_back(e.all_logits ? e.tokens.size() : 0);
      for (size_t k = 0; k < e.tokens.size(); k++) {
        if (e.all_logits || k + 1 == e.tokens.size()) b.logit_rows.push_back(int(b.slots.size()));
        b.slots.push_back(model::RowSlot{&s.layers, pos0 + uint32_t(k), s.hidden.slot(pos0 + k)});
        b.tokens.push_back(e.tokens[k]);
      }
    }
    b.logits.resize(b.logit_rows.size() * V);
    if (m.device) {
      // The same rows as one pass on the device (docs/cuda.md §forward), its scratch the model's
      // (scratch_pool.hpp), as the contexts' solo passes use.
      b.device_rows.clear();
      for (const BatchEntry& e : entries) {
        Context::State& s = *e.context->state_;
        b.device_rows.push_back({&s.device->states(), uint32_t(s.tokens.size()), int(e.tokens.size()),
                                 s.hidden.slots ? &s.hidden : nullptr});
      }
      m.device_scratch->take()->run(b.device_rows, b.tokens.data(), b.logit_rows.data(), int(b.logit_rows.size()),
                                    b.logits.data());
    } else {
      model::forward_rows(m, b.slots.data(), b.tokens.data(), int(rows), b.logit_rows.data(), int(b.logit_rows.size()),
                          b.logits.data(), *m.cpu_scratch.take());
    }

    // Each context's bookkeeping, as prefill (last row) or verify (every row) does it.
    for (size_t i = 0; i < entries.size(); i++) {
      const BatchEntry& e = entries[i];
      Context::State& s = *e.context->state_;
      const size_t n = e.tokens.size(), pos0 = s.tokens.size();
      s.tokens.insert(s.tokens.end(), e.tokens.begin(), e.tokens.end());
      for (size_t k = 0; k < n; k++) s.hidden.mark(pos0 + k);
      const float* first = b.logits.data() + b.first_logit[i] * V;
      const size_t n_logits = e.all_logits ? n : 1;
      for (size_t k = 0; k < n_logits; k++)
        model::remember_logits(s, V, pos0 + (e.all_logits ? k : n - 1), first + k * V);
      const float* last = first + (n_logits - 1) * V;
      s.logits.assign(last, last + V);
      s.high_water = std::max<uint64_t>(s.high_water, s.tokens.size());
    }
  } catch (const cuda::DeviceLost&) {
    throw;
  } catch (const std::exception& e) {
    throw BatchStepFailed(std::string("BatchStep: the pass failed after it began changing its contexts (reset them ") +
                          "before reuse): " + e.what());
  }
}

}  // namespace ds4
