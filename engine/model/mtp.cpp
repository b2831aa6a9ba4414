// The MTP drafter: the sidecar's block bound beside a base model, and one sequence's drafting
// state. The block is a ratio-0 layer run by the same block_forward as the model's layers; what
// is its own is the input (embedding and the target's final state, each normed and projected)
// and the head's collapse. Semantics and the catch-up rule: docs/speculation.md §mtp.
#include "engine/model/mtp.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/gguf/sidecar_binding.hpp"
#include "engine/model/device/device_mtp.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/model/mtp_impl.hpp"
#include "engine/model/numerics.hpp"
#include "engine/model/rms_norm.hpp"
#include "engine/planner/workspace_estimate.hpp"

namespace ds4 {

namespace {
// Draft rows the block's raw ring can take back (speculation.k is at most 16).
constexpr uint32_t kDraftRollback = 32;
// Starting over (a new prompt, a restore), the block catches up on at most this many of the
// target's last positions: its attention then sees fewer rows than it was trained with until
// decoding fills its window. On the embedded model (window 512) a full catch-up per turn cost more
// than the drafts saved; 128 rows kept 98 % of the acceptance (docs/speculation.md §mtp). DS4
// Flash's window is 128.
constexpr uint64_t kMaxCatchUp = 128;
// The plan's drafter term counts a step of that many rows and the next token.
static_assert(planner::kDrafterPassRows == kMaxCatchUp + 1);
}  // namespace

MtpModel::MtpModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MtpModel::~MtpModel() = default;
const Model& MtpModel::base() const { return *impl_->base; }
uint32_t MtpModel::hidden_reach() const {
  return uint32_t(std::min<uint64_t>(impl_->base->impl().cfg.n_swa, kMaxCatchUp));
}
uint64_t MtpModel::weight_bytes() const { return impl_->bytes; }
const std::string& MtpModel::placement() const { return impl_->placement; }

std::shared_ptr<const MtpModel> MtpModel::load(const std::filesystem::path& sidecar, std::shared_ptr<const Model> base,
                                               const std::filesystem::path& base_path) {
  if (!base) throw std::invalid_argument("MtpModel::load needs a base model");
  gguf::check_sidecar_binding(base_path.string(), sidecar.string());
  auto impl = std::make_unique<Impl>(gguf::GgufFile::open(sidecar.string()));
  const model::ModelConfig& c = base->impl().cfg;
  const gguf::GgufFile& f = impl->file;
  using T = quant::Type;
  const uint64_t D = c.n_embd;
  impl->hc_head_base = model::bind_tensor(f, "mtp.0.hc_head_base.weight", {T::F32}, {c.n_hc});
  impl->hc_head_fn = model::bind_tensor(f, "mtp.0.hc_head_fn.weight", {T::F16, T::F32}, {c.hc_dim(), c.n_hc});
  impl->hc_head_scale = model::bind_tensor(f, "mtp.0.hc_head_scale.weight", {T::F32}, {1});
  impl->e_proj = model::bind_tensor(f, "mtp.0.e_proj.weight", {T::Q8_0}, {D, D});
  impl->h_proj = model::bind_tensor(f, "mtp.0.h_proj.weight", {T::Q8_0}, {D, D});
  impl->enorm = model::bind_tensor(f, "mtp.0.enorm.weight", {T::F32}, {D});
  impl->hnorm = model::bind_tensor(f, "mtp.0.hnorm.weight", {T::F32}, {D});
  impl->norm = model::bind_tensor(f, "mtp.0.norm.weight", {T::F32}, {D});
  impl->block = model::bind_layer(f, c, "mtp.0.", 0, false, true);
  // A ratio-0 layer: plain RoPE on the raw window, top-k routing, the SwiGLU clamp of layer 1
  // (ds4 runs the block as layer index 1).
  impl->block_cfg = c;
  impl->block_cfg.n_layer = 1;
  impl->block_cfg.compress_ratio = {0};
  impl->rope = model::rope_params_for_layer(impl->block_cfg, 0);
  impl->clamp = c.swiglu_clamp.at(std::min<size_t>(1, c.swiglu_clamp.size() - 1));
  impl->spec = model::BlockSpec{&impl->block, &impl->rope, 0, 0, false, impl->clamp};
  for (const gguf::TensorInfo& t : f.tensors()) impl->bytes += t.n_bytes;
  // A base on the device drafts there too, when the sidecar's weights fit beside it.
  if (base->impl().device)
    impl->device = model::device::place_sidecar_weights(f.base(), f.size(), base->impl().device,
                                                        base->impl().device_reserve, impl->placement);
  else impl->placement = "MTP block on the CPU, as its base model";
  impl->base = std::move(base);
  return std::shared_ptr<const MtpModel>(new MtpModel(std::move(impl)));
}

struct MtpDrafter::State {
  std::vector<model::LayerState> layers;  // one ratio-0 layer: the block's raw KV rows
  // The rows hold positions [first, next); `seen` is the target's token prefix they were
  // computed from (row p from seen[p] and the target's final state after p - 1).
  uint64_t first = 0, next = 0;
  std::vector<int32_t> seen;
  std::vector<float> logits;                      // the last step's (last_logits)
  std::unique_ptr<model::device::DeviceMtp> dev;  // a base on the device: the block's rows there
};

DraftScratch::DraftScratch() = default;
DraftScratch::~DraftScratch() = default;

MtpDrafter::MtpDrafter(std::shared_ptr<const MtpModel> mtp) : mtp_(std::move(mtp)), state_(std::make_unique<State>()) {
  if (!mtp_) throw std::invalid_argument("MtpDrafter needs an MTP model");
  const model::ModelConfig& c = mtp_->impl().block_cfg;
  state_->layers = model::make_layer_states(c, c.n_swa + kDraftRollback, kDraftRollback);
  if (mtp_->impl().device) state_->dev = std::make_unique<model::device::DeviceMtp>(mtp_->impl(), state_->layers[0]);
}
MtpDrafter::~MtpDrafter() = default;
MtpDrafter::MtpDrafter(MtpDrafter&&) noexcept = default;
MtpDrafter& MtpDrafter::operator=(MtpDrafter&&) noexcept = default;

std::span<const float> MtpDrafter::last_logits() const { return state_->logits; }

void MtpDrafter::reset() {
  State& s = *state_;
  for (auto& l : s.layers) l.reset();
  if (s.dev) s.dev->state().n_raw = s.dev->state().raw_head = 0;
  s.first = s.next = 0;
  s.seen.clear();
}

namespace {

// Runs the block over T consecutive rows at positions pos0.. of `layers`: tokens[t] with the
// previous state P[t] (n_hc x D each). Leaves the output states in x.H_out and, when logits is
// set, the last row's logits there.
void mtp_rows(const MtpModel::Impl& mi, MtpDrafter::State& s, DraftScratch& x, const int32_t* tokens, const float* P,
              int T, uint64_t pos0, float* logits) {
  const Model::Impl& m = mi.base->impl();
  const model::ModelConfig& c = m.cfg;
  const uint32_t D = c.n_embd, hc = c.hc_dim(), n_hc = c.n_hc;
  // e = RMSNorm(embed(t)) * enorm, projected by e_proj.
  x.e.resize(size_t(T) * hc);
  model::embed_rows(m, tokens, T, x.e.data());  // stream 0 of each row is the embedding
  x.en.resize(size_t(T) * D);
  for (int t = 0; t < T; t++)
    model::rms_norm(m.ex, x.en.data() + size_t(t) * D, x.e.data() + size_t(t) * hc, mi.enorm.f32(), D, c.rms_eps);
  x.E.resize(size_t(T) * D);
  model::project(m.ex, mi.e_proj, x.en.data(), T, x.E.data(), x.qa);
  // Each stream of P: RMSNorm * hnorm, projected by h_proj.
  const int R = T * int(n_hc);
  x.pn.resize(size_t(R) * D);
  for (int r = 0; r < R; r++)
    model::rms_norm(m.ex, x.pn.data() + size_t(r) * D, P + size_t(r) * D, mi.hnorm.f32(), D, c.rms_eps);
  x.Hh.resize(size_t(R) * D);
  model::project(m.ex, mi.h_proj, x.pn.data(), R, x.Hh.data(), x.qa);
  x.Hin.resize(size_t(T) * hc);
  for (int t = 0; t < T; t++)
    for (uint32_t h = 0; h < n_hc; h++) {
      const float* E = x.E.data() + size_t(t) * D;
      const float* Hh = x.Hh.data() + (size_t(t) * n_hc + h) * D;
      float* out = x.Hin.data() + size_t(t) * hc + size_t(h) * D;
      for (uint32_t i = 0; i < D; i++) out[i] = E[i] + Hh[i];
    }
  x.slots.resize(size_t(T));
  for (int t = 0; t < T; t++) x.slots[t] = model::RowSlot{&s.layers, uint32_t(pos0 + t), nullptr};
  x.H_mid.resize(size_t(T) * hc);
  x.H_out.resize(size_t(T) * hc);
  model::block_forward(m, mi.spec, x.slots.data(), tokens, x.Hin.data(), T, x.H_mid.data(), x.H_out.data(), x.fs);
  if (logits) {
    const model::HeadWeights hw{&mi.hc_head_fn, &mi.hc_head_scale, &mi.hc_head_base, &mi.norm, &m.w.output};
    model::output_head(m.ex, c, hw, x.H_out.data() + size_t(T - 1) * hc, 1, logits, x.head);
  }
}

// mtp_rows where the block runs: on the device only the last row's output state comes back, so
// x.H_out then holds that row alone (what the next draft step reads).
void block_rows(const MtpModel::Impl& mi, MtpDrafter::State& s, DraftScratch& x, const int32_t* tokens, const float* P,
                int T, uint64_t pos0, float* logits) {
  if (!s.dev) return mtp_rows(mi, s, x, tokens, P, T, pos0, logits);
  if (!x.dev) x.dev = std::make_unique<model::device::DeviceMtpScratch>();
  x.H_out.resize(mi.base->impl().cfg.hc_dim());
  s.dev->rows(*x.dev, tokens, P, T, uint32_t(pos0), x.H_out.data(), logits);
}

int32_t argmax(const float* x, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return int32_t(best);
}

}  // namespace

std::vector<int32_t> MtpDrafter::draft(const Context& target, int32_t next, size_t k) {
  State& s = *state_;
  const MtpModel::Impl& mi = mtp_->impl();
  if (&target.model() != mi.base.get()) throw std::invalid_argument("MtpDrafter: the context belongs to another model");
  const model::ModelConfig& c = mi.base->impl().cfg;
  const uint64_t n = target.size();
  k = std::min<size_t>(k, kDraftRollback / 2);
  if (k == 0 || n == 0 || target.hidden(n - 1).empty()) return {};
  if (next < 0 || uint32_t(next) >= c.n_vocab)
    throw std::out_of_range("MtpDrafter: token id " + std::to_string(next) + " is outside the vocabulary");

  // Keep the rows whose tokens (and so whose inputs) the target still has.
  const std::vector<int32_t>& tok = target.tokens();
  uint64_t keep = std::min<uint64_t>(s.next, n);
  for (uint64_t p = 0; p < keep; p++)
    if (s.seen[p] != tok[p]) keep = p;
  model::LayerState& L = s.layers[0];
  uint32_t& n_raw = s.dev ? s.dev->state().n_raw : L.n_raw;  // the block's rows: where it runs
  const uint64_t window = L.raw_window;
  if (keep < s.next) {
    const uint64_t back = s.next - keep;
    // Roll back only if the ring still holds a full window behind `keep` (else start over).
    if (keep <= s.first || back > n_raw || n_raw - back < std::min<uint64_t>(keep - s.first, window)) reset();
    else {
      n_raw -= uint32_t(back);
      s.next = keep;
    }
  }
  // Rows to compute: from `next` (or, starting over, as far back as the block attends and the
  // target kept its states) up to n - 1, then position n with `next`.
  const uint64_t reach = std::min<uint64_t>(window, kMaxCatchUp);
  bool start_over = s.next == 0 || n - s.next > reach;
  for (uint64_t p = s.next; !start_over && p <= n; p++) start_over = target.hidden(p - 1).empty();
  uint64_t from = s.next;
  if (start_over) {
    reset();
    from = n;
    while (from > 1 && n - from < reach && !target.hidden(from - 2).empty()) from--;
    s.first = from;
  }
  const uint32_t hc = c.hc_dim();
  const int T = int(n + 1 - from);
  // The model's draft scratch, this call's alone until it returns.
  const auto lease = mi.draft_scratch.take();
  DraftScratch& x = *lease;
  x.toks.assign(size_t(T), 0);
  x.P.resize(size_t(T) * hc);
  for (int t = 0; t < T; t++) {
    const uint64_t p = from + uint64_t(t);
    x.toks[t] = p < n ? tok[p] : next;
    const std::span<const float> h = target.hidden(p - 1);
    std::copy(h.begin(), h.end(), x.P.begin() + size_t(t) * hc);
  }
  s.logits.resize(c.n_vocab);
  block_rows(mi, s, x, x.toks.data(), x.P.data(), T, from, s.logits.data());
  // Kept rows' tokens were checked equal to the target's above; starting over copies them.
  if (start_over) s.seen.assign(tok.begin(), tok.begin() + std::ptrdiff_t(from));
  else s.seen.resize(from);
  s.seen.insert(s.seen.end(), tok.begin() + std::ptrdiff_t(from), tok.end());
  s.seen.push_back(next);
  s.next = n + 1;

  std::vector<int32_t> drafts{argmax(s.logits.data(), c.n_vocab)};
  while (drafts.size() < k && s.next + drafts.size() < target.capacity()) {
    x.P.assign(x.H_out.end() - hc, x.H_out.end());
    const int32_t d = drafts.back();
    block_rows(mi, s, x, &d, x.P.data(), 1, n + drafts.size(), s.logits.data());
    drafts.push_back(argmax(s.logits.data(), c.n_vocab));
  }
  n_raw -= uint32_t(drafts.size() - 1);  // the draft rows: only committed positions stay
  return drafts;
}

}  // namespace ds4
