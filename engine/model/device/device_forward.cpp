// See device_forward.hpp. The order is forward.cpp's forward_rows: embed, blocks, head.
#include "engine/model/device/device_forward.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/cuda/embed.hpp"
#include "engine/model/device/device_buffers.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/planner/workspace_estimate.hpp"

namespace ds4::model::device {
namespace {

// The planner budgets the executables a pass's graphs keep (planner::graph_bytes).
static_assert(cuda::PassGraph::kMaxShapes == planner::kGraphShapes);

// The pass's two error words in one wait; a set word is read again, cleared and thrown by its own
// check (cuda::check_embed_error, check_route_error).
void check_pass_errors(cuda::DeviceSpan errors) {
  int32_t words[2] = {0, 0};
  errors.download(words, sizeof words);
  if (words[0] != 0) cuda::check_embed_error(errors.sub(0, 4));
  if (words[1] != 0) check_route_error(errors.sub(4, 4));
}

}  // namespace

void queue_pass(cuda::PassGraph& graph, int rows, const std::function<void()>& enqueue) {
  if (rows <= kGraphRows && cuda::PassGraph::enabled()) graph.run(enqueue);
  else enqueue();
}

DevicePass::DevicePass(const Model::Impl& m, const DeviceWeights& weights) : m_(m), dw_(weights) {
  if (m.ex.exact) throw std::invalid_argument("the CUDA backend computes the Fast order only: load the model in Fast");
}

void DevicePass::run(std::span<const SequenceRows> seqs, const int32_t* tokens, const int* logit_rows, int n_logit,
                     float* logits, const std::function<void(uint32_t)>& on_layer) {
  const ModelConfig& cfg = m_.cfg;
  int T = 0;
  for (const SequenceRows& q : seqs) T += q.n;
  if (T <= 0) return;
  check_token_ids(cfg, tokens, T);
  const size_t hc = cfg.hc_dim(), row = hc * sizeof(float);
  // Two error words, read once after the pass (a wait there, not in a layer): the embedding's, the
  // hash layers' routing.
  const cuda::DeviceSpan dtok = grown<int32_t>(tokens_, size_t(T)), errors = grown<int32_t>(error_, 2);
  const cuda::DeviceSpan error = errors.sub(0, 4), route_error = errors.sub(4, 4);
  cuda::DeviceSpan H = grown(H_, size_t(T) * hc), mid = grown(H_mid_, size_t(T) * hc),
                   next = grown(H_next_, size_t(T) * hc);
  // The head is per row: a consecutive run of rows needs no gathering.
  bool consecutive = true;
  for (int i = 1; i < n_logit; i++) consecutive = consecutive && logit_rows[i] == logit_rows[0] + i;
  const cuda::DeviceSpan Hsel = n_logit <= 0 || consecutive ? cuda::DeviceSpan{} : grown(H_sel_, size_t(n_logit) * hc);
  const cuda::DeviceSpan out = n_logit <= 0 ? cuda::DeviceSpan{} : grown(logits_, size_t(n_logit) * cfg.n_vocab);
  // Everything the device does for the pass, queued without a wait: launched one by one, or as
  // one graph for the short passes (decode, verify, a batch step), where the launches' cost is
  // of the order of the work (docs/cuda.md §graphs).
  const auto enqueue = [&] {
    dtok.upload(tokens, size_t(T) * sizeof(int32_t));
    const int32_t zeros[2] = {0, 0};
    errors.upload(zeros, sizeof zeros);
    cuda::embed(dtok, T, dw_.at(m_.w.token_embd), cfg.n_vocab, cfg.n_embd, cfg.n_hc, H, error);
    for (uint32_t il = 0; il < cfg.n_layer; il++) {
      runs_.clear();
      for (const SequenceRows& q : seqs) runs_.push_back(RowRun{&q.layers->at(il), q.pos0, q.n});
      const LayerWeights& lw = m_.w.layers[il];
      attention_sublayer(dw_, cfg, lw, m_.rope[il], runs_, H, T, mid, ls_, as_);
      ffn_sublayer(dw_, cfg, lw, il < cfg.n_hash_layer, cfg.swiglu_clamp[il], dtok, mid, T, next, ls_, route_error);
      std::swap(H, next);
      if (on_layer) on_layer(il);
    }
    if (n_logit <= 0) return;
    cuda::DeviceSpan rows = H.sub(size_t(logit_rows[0]) * row, size_t(n_logit) * row);
    if (!consecutive) {
      for (int i = 0; i < n_logit; i++)
        Hsel.sub(size_t(i) * row, row).copy_from(H.sub(size_t(logit_rows[i]) * row, row));
      rows = Hsel;
    }
    output_head(dw_, cfg, head_weights(m_.w), rows, n_logit, out, hs_);
  };
  queue_pass(graph_, T, enqueue);
  // Each sequence's final states into its ring: the rows the ring keeps (its last `slots`), in at
  // most two copies (where the ring wraps) rather than one wait per row.
  int first = 0;
  for (const SequenceRows& q : seqs) {
    if (q.hidden && q.hidden->slots) {
      const uint32_t slots = q.hidden->slots;
      for (uint32_t t = uint32_t(q.n) - std::min<uint32_t>(uint32_t(q.n), slots); t < uint32_t(q.n);) {
        const uint64_t pos = uint64_t(q.pos0) + t;
        const uint32_t run = std::min<uint32_t>(uint32_t(q.n) - t, slots - uint32_t(pos % slots));
        H.download(q.hidden->slot(pos), run * row, size_t(first + int(t)) * row);
        for (uint32_t i = 0; i < run; i++) q.hidden->mark(pos + i);
        t += run;
      }
    }
    first += q.n;
  }
  if (n_logit > 0) out.download(logits, size_t(n_logit) * cfg.n_vocab * sizeof(float));
  graph_.settle();
  check_pass_errors(errors);
}

DeviceForward::DeviceForward(const Model::Impl& m, ScratchPool<DevicePass>& passes,
                             const std::vector<LayerState>& shapes)
    : m_(m), passes_(passes) {
  if (m.ex.exact) throw std::invalid_argument("the CUDA backend computes the Fast order only: load the model in Fast");
  if (shapes.size() != m.cfg.n_layer) throw std::invalid_argument("device forward: one layer state per layer");
  layers_ = make_device_states(shapes);
}

void DeviceForward::forward(const int32_t* tokens, int T, uint32_t pos0, bool all_logits, float* logits,
                            HiddenRing* hidden, const std::function<void(uint32_t)>& on_layer) {
  if (T <= 0) return;
  logit_rows_.clear();
  for (int t = all_logits ? 0 : T - 1; t < T; t++) logit_rows_.push_back(t);
  const SequenceRows seq{&layers_, pos0, T, hidden};
  passes_.take()->run(std::span<const SequenceRows>(&seq, 1), tokens, logit_rows_.data(), int(logit_rows_.size()),
                      logits, on_layer);
}

void DeviceForward::upload_state(const std::vector<LayerState>& from) {
  for (size_t il = 0; il < layers_.size(); il++) layers_[il].upload(from.at(il));
}

void DeviceForward::download_state(std::vector<LayerState>& to) const {
  for (size_t il = 0; il < layers_.size(); il++) layers_[il].download(to.at(il));
}

void DeviceForward::truncate(std::vector<LayerState>& mirror, uint64_t size, uint64_t n) {
  for (size_t il = 0; il < layers_.size(); il++) layers_[il].rollback_view(mirror.at(il), n);
  truncate_layer_states(m_, mirror, size, n);  // throws before changing the mirror
  for (size_t il = 0; il < layers_.size(); il++) layers_[il].finish_rollback(mirror[il]);
}

uint64_t DeviceForward::state_bytes() const {
  uint64_t b = 0;
  for (const DeviceLayerState& l : layers_) b += l.bytes();
  return b;
}

}  // namespace ds4::model::device
