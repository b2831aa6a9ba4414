#pragma once
// ds4::Model / ds4::Context: the public face of the DeepSeek V4 Flash forward pass.
//
// A Model is the immutable part: the mapped GGUF, the metadata-derived dimensions, the weight
// table and one thread pool. It is shared (std::shared_ptr) by any number of Contexts. A Context
// is one token sequence: its KV state, compressor states, the token list and the last logits.
// Contexts are not thread-safe; use one thread per Context (the Model's pool is shared and
// serialises parallel regions). Arithmetic::Exact is the reference engine's operation order;
// Arithmetic::Fast is the documented order of docs/arithmetic.md, the same bits on every ISA.
// In either, prefill(), decode() and verify() give bit-identical logits for the same token at
// the same position, whatever the thread count: docs/engine.md §engine, docs/arithmetic.md §threads.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ds4 {

namespace gguf {
class GgufFile;
}
class ActivationObserver;  // activation_observer.hpp
class BatchStep;           // batch_step.hpp

enum class Arithmetic { Exact, Fast };
// What runs the forward of every context of a model: the CPU, or CUDA device 0 with the same bits
// as the CPU's Fast order (the model must be loaded in Fast): docs/cuda.md §forward.
enum class ComputeDevice { Cpu, Cuda };

struct LoadOptions {
  unsigned threads = 0;  // 0: std::thread::hardware_concurrency()
  Arithmetic arithmetic = Arithmetic::Fast;
  bool populate = false;  // prefault the whole mapping at load (MAP_POPULATE)
  // Run the generic (portable scalar) kernels instead of the CPU's SIMD set: the same bits in
  // either arithmetic, slower. Tests use it to hold the SIMD kernels to the reference.
  bool generic_kernels = false;
  // Sees every projection input (activation_observer.hpp); not owned, must outlive the model.
  ActivationObserver* activation_observer = nullptr;
  // Cuda: the weights are placed for the device at load (in place on a unified-memory device,
  // else copied when they fit with `device_reserve_bytes` for the contexts' state and workspace;
  // docs/cuda.md §placement) and every Context runs there. load() throws std::runtime_error
  // naming what is missing (driver, device, memory) or std::invalid_argument for Exact.
  ComputeDevice device = ComputeDevice::Cpu;
  uint64_t device_reserve_bytes = 0;
};

// fraction in [0, 1]; stage names what is happening ("mapping", "metadata", "tensors",
// "ready" for loads; "prefill" for prefills, one call per layer per 256-token chunk).
using ProgressFn = std::function<void(double fraction, std::string_view stage)>;
using LoadProgress = ProgressFn;

struct ModelInfo {
  std::string name;  // general.name
  uint32_t n_layer = 0, n_embd = 0, n_vocab = 0;
  uint32_t n_head = 0, head_dim = 0, n_rot = 0;
  uint32_t q_lora_rank = 0, out_lora_rank = 0, n_out_group = 0;
  uint32_t n_expert = 0, n_expert_used = 0, n_expert_shared = 0, expert_ff = 0;
  uint32_t n_hash_layer = 0, sliding_window = 0;
  uint32_t indexer_heads = 0, indexer_head_dim = 0, indexer_top_k = 0;
  uint32_t n_hc = 0, sinkhorn_iters = 0;
  uint64_t context_length = 0;                 // metadata context_length (not validated)
  std::vector<uint32_t> compress_ratios;       // per layer: 0, 4 or 128
  std::string expert_types;                    // e.g. "iq2_xxs/iq2_xxs/q2_K" (gate/up/down)
  uint64_t weight_bytes = 0;                   // bytes of all tensor data in the file
  uint64_t active_weight_bytes_per_token = 0;  // dense weights + n_expert_used experts per layer
  unsigned threads = 0;                        // size of the model's thread pool
  Arithmetic arithmetic = Arithmetic::Fast;
  ComputeDevice device = ComputeDevice::Cpu;
  std::string placement;  // Cuda: one sentence on where the weights are and why; else empty
};

class Model {
 public:
  // Maps the GGUF, validates metadata and every tensor's type and shape against the DS4
  // layout, and builds the weight table. Throws std::runtime_error naming the file and the
  // offending key or tensor.
  static std::shared_ptr<Model> load(const std::filesystem::path& path, const LoadOptions& options,
                                     LoadProgress progress = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const;
  const gguf::GgufFile& gguf() const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ContextOptions {
  uint32_t context_length = 0;  // 0: metadata context_length capped at 65536
  uint32_t rollback = 64;       // how many recent tokens truncate() can take back
  // Keep the final hyper-connection state of this many recent positions (plus `rollback`), for
  // an MTP drafter (mtp.hpp; MtpModel::hidden_reach()). 0: none kept.
  uint32_t keep_hidden = 0;
};

class Context {
 public:
  explicit Context(std::shared_ptr<const Model> model, ContextOptions options = {});
  ~Context();
  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Appends tokens (layer-major over the batch) and returns the last token's logits.
  // Throws std::length_error past capacity(), std::out_of_range for a bad token id.
  std::span<const float> prefill(std::span<const int32_t> tokens, ProgressFn progress = {});
  // Appends one token and returns its logits.
  std::span<const float> decode(int32_t token);
  // Appends tokens and returns the logits after each of them; bit-identical to decoding them
  // one by one (this is what exact speculative decoding checks drafts with).
  std::vector<std::vector<float>> verify(std::span<const int32_t> tokens);

  // Drops tokens so that n remain. n may go back at most ContextOptions::rollback tokens from
  // the furthest size the context has reached, and not behind the last restore() or reset()
  // (the rollback history lives in rings). Afterwards the context continues bit-identically to
  // one that only ever saw the first n tokens. This is the rollback of speculative decoding
  // (verify the drafts, keep the accepted prefix). logits() becomes the logits after token
  // n-1 if they were computed (decode, verify, the end of a prefill), else empty. Throws
  // std::out_of_range with the reason, leaving the context untouched, when n is out of reach.
  void truncate(size_t n);
  // The smallest n truncate(n) accepts now (size() when nothing can be taken back).
  size_t truncate_floor() const;
  // How many tokens can be appended now such that truncate(size()) still works afterwards
  // (0 when none: the rollback reach is spent, or there is none).
  size_t rollback_room() const;

  std::span<const float> logits() const;  // logits after the last token (empty if none)
  // The final hyper-connection state (n_hc x n_embd floats) after token `pos` < size(), if it is
  // kept (ContextOptions::keep_hidden) and was computed since the last restore(); else empty.
  // Valid until the next change of the context.
  std::span<const float> hidden(size_t pos) const;
  const std::vector<int32_t>& tokens() const;
  size_t size() const;           // tokens in the context
  uint32_t capacity() const;     // maximum tokens
  uint64_t cache_bytes() const;  // bytes held by this context's caches

  // Complete state as bytes: versioned, checksummed header, then tokens, logits and caches.
  std::vector<uint8_t> snapshot() const;
  // Replaces the state with a snapshot. Throws std::runtime_error with the reason (bad magic,
  // version, model mismatch, checksum, truncation); on error the context is untouched.
  void restore(std::span<const uint8_t> bytes);
  void reset();

  const Model& model() const;

  struct State;

 private:
  friend class BatchStep;  // advances several contexts' states in one pass
  std::shared_ptr<const Model> model_;
  std::unique_ptr<State> state_;
};

}  // namespace ds4
