#pragma once
// ds4::BatchStep: one forward pass over new tokens of several Contexts at once (continuous
// batching). Each context ends exactly as if its tokens had been prefilled (or verified) alone:
// same logits bit for bit, same tokens, same truncate() reach, same snapshot.
//
// A BatchStep holds the step's scratch and the all-rows logits of the last run(); it owns no
// context. It is not thread-safe; during run() the entries' contexts must not be used by any other
// thread, and between runs they are ordinary contexts. What a step computes, why the logits are
// bit-identical, and the ownership rules:
// docs/batching.md §what-a-step-is, §rows, §ownership-and-concurrency.
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "engine/model/model.hpp"

namespace ds4 {

// Thrown by BatchStep::run when the pass failed after it had begun changing the contexts (out of
// memory, a driver error): their states may be half-updated, so each must be reset or dropped
// before it is used again; running the entries again instead would compute on that state. what()
// names the cause. A lost GPU stays cuda::DeviceLost.
class BatchStepFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One context's part of a step.
struct BatchEntry {
  Context* context = nullptr;       // not owned; at most one entry per context in a step
  std::span<const int32_t> tokens;  // appended in order; at least one
  bool all_logits = false;          // keep every row's logits (row_logits), as Context::verify
};

class BatchStep {
 public:
  // max_rows bounds the tokens of one step (the activations grow with it); prefill chunks
  // are the caller's to size, as Context::prefill does with its 256-token passes.
  explicit BatchStep(std::shared_ptr<const Model> model, uint32_t max_rows = 512);
  ~BatchStep();
  BatchStep(const BatchStep&) = delete;
  BatchStep& operator=(const BatchStep&) = delete;

  // Runs one forward pass over every entry's tokens. Afterwards each context holds its new
  // tokens and logits() is its last token's logits, exactly as after context->prefill(tokens)
  // (or verify(tokens) for all_logits entries). Throws before changing any context:
  // std::invalid_argument naming the entry (no context, no tokens, a context twice, another
  // model), std::length_error (a context's capacity, or more than max_rows tokens in all),
  // std::out_of_range (a token id outside the vocabulary). Anything that fails later is
  // BatchStepFailed (or cuda::DeviceLost). An empty list does nothing.
  void run(std::span<const BatchEntry> entries);

  // Logits after each token of entry `entry` of the last run(): tokens.size() x n_vocab floats
  // for an all_logits entry, empty otherwise. Owned by this BatchStep, valid until the next
  // run() or its destruction.
  std::span<const float> row_logits(size_t entry) const;

  uint32_t max_rows() const { return max_rows_; }
  const Model& model() const { return *model_; }

  struct Impl;

 private:
  std::shared_ptr<const Model> model_;
  uint32_t max_rows_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4
