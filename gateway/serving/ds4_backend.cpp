// The real engine behind the serving layer. See ds4_backend.hpp.
#include "gateway/serving/ds4_backend.hpp"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <algorithm>
#include <optional>

#include "engine/cuda/device.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/loaded_model/loaded_model.hpp"

namespace ds4::serving {
namespace {

// Runs an engine call; a GPU the context does not survive becomes EngineLost (engine_backend.hpp).
template <class F>
decltype(auto) on_engine(F&& f) {
  try {
    return f();
  } catch (const cuda::DeviceLost& e) {
    throw EngineLost(e.what());
  }
}

}  // namespace

class Ds4Sequence final : public EngineSequence {
 public:
  Ds4Sequence(std::shared_ptr<const Model> model, ContextOptions options, std::shared_ptr<const MtpModel> mtp)
      : context_(std::move(model), options) {
    if (mtp) drafter_.emplace(std::move(mtp));
  }

  const std::vector<Token>& tokens() const override { return context_.tokens(); }
  size_t capacity() const override { return context_.capacity(); }
  void clear() override {
    on_engine([&] { context_.reset(); });
  }
  void append(std::span<const Token> tokens) override {
    on_engine([&] { tokens.size() == 1 ? context_.decode(tokens[0]) : context_.prefill(tokens); });
  }
  std::span<const float> logits() const override { return context_.logits(); }
  std::vector<std::vector<float>> verify(std::span<const Token> tokens) override {
    return on_engine([&] { return context_.verify(tokens); });
  }
  size_t truncate_floor() const override { return context_.truncate_floor(); }
  size_t rollback_room() const override { return context_.rollback_room(); }
  void truncate(size_t n) override {
    on_engine([&] { context_.truncate(n); });
  }
  std::vector<uint8_t> snapshot() const override {
    return on_engine([&] { return context_.snapshot(); });
  }
  void restore(std::span<const uint8_t> state) override {
    on_engine([&] { context_.restore(state); });
  }
  std::vector<Token> model_draft(Token next, size_t k) override {
    return on_engine([&] { return drafter_ ? drafter_->draft(context_, next, k) : std::vector<Token>{}; });
  }
  Context& context() { return context_; }

 private:
  Context context_;
  std::optional<MtpDrafter> drafter_;  // the MTP block's rows for this sequence
};

Ds4Backend::Ds4Backend(std::shared_ptr<const Model> model, tokenizer::Tokenizer tokenizer, std::string model_id,
                       ContextOptions context_options)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      model_id_(std::move(model_id)),
      context_options_(context_options) {
  if (model_id_.empty()) model_id_ = model_->info().name.empty() ? "ds4" : model_->info().name;
  // The context decides its capacity (metadata context_length, capped). Build the live one now,
  // so its size is known and its memory is allocated before the service reports ready.
  first_sequence_ = std::make_unique<Ds4Sequence>(model_, context_options_, nullptr);
  context_length_ = first_sequence_->capacity();
  // The GGUF header, metadata and tensor table (everything before the data section) name the
  // architecture, the tokenizer and every tensor's type, shape and offset.
  const auto& file = model_->gguf();
  fingerprint_ = XXH64(file.base(), std::min<uint64_t>(file.data_offset(), file.size()), 0x44533443);
  if (fingerprint_ == 0) fingerprint_ = 1;
}

std::shared_ptr<Ds4Backend> Ds4Backend::load(const std::filesystem::path& path, const LoadOptions& load_options,
                                             ContextOptions context_options, ProgressFn progress,
                                             std::string model_id) {
  LoadedModel loaded = load_model(path, load_options, std::move(progress));
  if (model_id.empty() && loaded.model->info().name.empty()) model_id = path.stem().string();
  return std::make_shared<Ds4Backend>(std::move(loaded.model), std::move(loaded.tokenizer), std::move(model_id),
                                      context_options);
}

Ds4Backend::~Ds4Backend() = default;

std::unique_ptr<EngineSequence> Ds4Backend::new_sequence() {
  if (first_sequence_) return std::move(first_sequence_);
  return std::make_unique<Ds4Sequence>(model_, context_options_, mtp_);
}

void Ds4Backend::set_drafter_model(std::shared_ptr<const MtpModel> mtp) {
  if (mtp && &mtp->base() != model_.get())
    throw std::invalid_argument("Ds4Backend: the MTP block belongs to another model");
  mtp_ = std::move(mtp);
  context_options_.keep_hidden = mtp_ ? mtp_->hidden_reach() : 0;
  // The live sequence made at construction keeps no final states: make it again.
  if (first_sequence_) first_sequence_ = std::make_unique<Ds4Sequence>(model_, context_options_, mtp_);
}

void Ds4Backend::step(std::span<StepEntry> entries) {
  std::vector<BatchEntry> batch(entries.size());
  size_t rows = 0;
  for (size_t i = 0; i < entries.size(); i++) {
    auto* seq = dynamic_cast<Ds4Sequence*>(entries[i].sequence);
    if (!seq) return EngineBackend::step(entries);  // not ours: one by one
    batch[i] = BatchEntry{&seq->context(), entries[i].tokens, entries[i].all_logits};
    rows += entries[i].tokens.size();
  }
  if (entries.size() < 2) return EngineBackend::step(entries);
  if (!batch_step_ || batch_step_->max_rows() < rows)
    batch_step_ = std::make_unique<BatchStep>(model_, static_cast<uint32_t>(std::max<size_t>(rows, 512)));
  try {
    batch_step_->run(batch);
  } catch (const cuda::DeviceLost& e) {
    throw EngineLost(e.what());  // every entry fails with it; nothing to retry on
  } catch (const BatchStepFailed& e) {
    // Failed midway: the contexts may be half-updated, so running the entries again would compute
    // on that state. Each fails (the service clears a failed turn's context).
    spdlog::warn("serving: batched step of {} entries failed: {}", entries.size(), e.what());
    for (StepEntry& entry : entries) entry.error = std::current_exception();
    return;
  } catch (const std::exception& e) {
    // BatchStep refuses before touching any context: run the entries alone, so that each one
    // gets its own error (or succeeds) and the others are not failed with it.
    spdlog::debug("serving: batched step refused ({}); running its {} entries one by one", e.what(), entries.size());
    return EngineBackend::step(entries);
  }
  for (size_t i = 0; i < entries.size(); i++) {
    if (!entries[i].all_logits) continue;
    const std::span<const float> all = batch_step_->row_logits(i);
    const size_t vocab = all.size() / entries[i].tokens.size();
    entries[i].row_logits.clear();
    for (size_t r = 0; r < entries[i].tokens.size(); r++)
      entries[i].row_logits.emplace_back(all.begin() + r * vocab, all.begin() + (r + 1) * vocab);
  }
}

}  // namespace ds4::serving
