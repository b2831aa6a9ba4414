#pragma once
// The DS4 forward on the CUDA device (docs/cuda.md §forward), the device twin of forward_rows and
// forward_batch in Fast mode: embedding, every block (attention with each context's device KV
// state, then the FFN), the output head, with the same bits as the CPU. The weights
// (shared by every context of the model) are read in place or from the device copy; the KV
// state lives on the device and copies to and from the CPU's layout, so a context can move
// between the backends at any token. A rollback moves only the compressor history and windows
// (docs/cuda.md §rollback).
//
// Concurrency: one context, one host thread, the device's default stream (a short pass is captured
// on its own stream and launched there as one graph: docs/cuda.md §graphs).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/pass_graph.hpp"
#include "engine/model/device/device_attention.hpp"
#include "engine/model/device/device_head.hpp"
#include "engine/model/device/device_kv_state.hpp"
#include "engine/model/device/device_layer.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model.hpp"
#include "engine/model/scratch_pool.hpp"

namespace ds4::model::device {

// One sequence's part of a pass: its next `n` rows (sequences follow each other in pass order) at
// positions pos0 .. pos0 + n - 1, appended to `layers` (one state per layer); `hidden`, if set,
// receives their final HC states (as forward_batch's).
struct SequenceRows {
  std::vector<DeviceLayerState>* layers = nullptr;
  uint32_t pos0 = 0;
  int n = 0;
  HiddenRing* hidden = nullptr;
};

// Passes of up to this many rows run as one CUDA graph while cuda::PassGraph::enabled(): decode,
// verify, batch steps and MTP draft steps, not prefill chunks (whose kernels dwarf their launches).
constexpr int kGraphRows = 32;

// Queues a pass of `rows` rows (`enqueue`: everything it does on the device, without a wait) as
// one graph on `graph` when it is short and graphs are on, else kernel by kernel. The caller reads
// the results after it, then calls graph.settle().
void queue_pass(cuda::PassGraph& graph, int rows, const std::function<void()>& enqueue);

// A forward pass on the device over the rows of one or more sequences, forward_rows' twin: the
// projections and the FFN over every row at once (the weights read once per pass), the stateful
// attention part row by row on each row's own state, so a row's logits do not depend on the rows
// beside it. Holds the pass's scratch (grown on demand, kept). One host thread at a time.
class DevicePass {
 public:
  DevicePass(const Model::Impl& m, const DeviceWeights& weights);

  // tokens: the rows' ids in pass order (checked on the host first: std::out_of_range naming the
  // id, no state touched). Logits of rows logit_rows[0 .. n_logit) into n_logit x n_vocab floats.
  // on_layer(il) is called after each layer is queued.
  void run(std::span<const SequenceRows> seqs, const int32_t* tokens, const int* logit_rows, int n_logit, float* logits,
           const std::function<void(uint32_t)>& on_layer = {});

 private:
  const Model::Impl& m_;
  const DeviceWeights& dw_;
  LayerScratch ls_;
  AttentionScratch as_;
  HeadScratch hs_;
  std::vector<RowRun> runs_;
  cuda::DeviceBuffer tokens_, H_, H_mid_, H_next_, H_sel_, error_, logits_;
  cuda::PassGraph graph_;  // after the buffers: destroyed first, waiting for its last launch
};

class DeviceForward {
 public:
  // m must be loaded in Fast arithmetic (the device has no Exact order); m and `passes` (the
  // passes over the weights this context reads: m.device_scratch for a model loaded for the
  // device) must outlive this, and every pass borrows its scratch there. `shapes` are the
  // context's CPU layer states (their capacities); the device state starts empty. Throws
  // std::invalid_argument for an Exact model, std::runtime_error from the driver (out of device
  // memory names the allocation).
  DeviceForward(const Model::Impl& m, ScratchPool<DevicePass>& passes, const std::vector<LayerState>& shapes);

  // Tokens at positions pos0 .. pos0 + T - 1: logits (n_vocab floats per row) of every row when
  // all_logits, else of the last. Ids are checked on the host first (std::out_of_range naming
  // the id, the state untouched). `hidden`, if given, receives every row's final HC state (as
  // forward_batch's); on_layer(il) is called after each layer is queued.
  void forward(const int32_t* tokens, int T, uint32_t pos0, bool all_logits, float* logits,
               HiddenRing* hidden = nullptr, const std::function<void(uint32_t)>& on_layer = {});

  void upload_state(const std::vector<LayerState>& from);
  void download_state(std::vector<LayerState>& to) const;

  // Rolls the device state back from `size` to `n` tokens as truncate_layer_states does on the
  // CPU: `mirror` (the context's CPU layer states, whose base states are current) receives the
  // counters and history, is truncated there (std::out_of_range, nothing changed, when out of
  // reach), and the rebuilt compressor windows go back up. No KV row moves.
  void truncate(std::vector<LayerState>& mirror, uint64_t size, uint64_t n);

  uint64_t state_bytes() const;  // device memory held by this context's state
  // This context's state, for a pass over several contexts (BatchStep).
  std::vector<DeviceLayerState>& states() { return layers_; }

 private:
  const Model::Impl& m_;
  ScratchPool<DevicePass>& passes_;
  std::vector<DeviceLayerState> layers_;
  std::vector<int> logit_rows_;
};

}  // namespace ds4::model::device
