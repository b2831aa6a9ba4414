// Model loading: map the GGUF, read every dimension from `deepseek4.*` metadata, check the
// constants the graph depends on, bind every tensor by name and check its type and shape
// against the dimensions. Any inconsistency is a load error naming the file and the key or
// tensor, so a wrong or truncated model fails here instead of producing garbage logits.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/model/device/device_forward.hpp"
#include "engine/model/device/device_weights.hpp"
#include "engine/model/model_impl.hpp"
#include "engine/quant/quant.hpp"

namespace ds4 {
namespace model {
namespace {

[[noreturn]] void fail(const gguf::GgufFile& f, const std::string& what) {
  throw std::runtime_error(f.path() + ": " + what);
}

std::string k(const char* key) { return std::string("deepseek4.") + key; }

uint32_t req_u32(const gguf::GgufFile& f, const char* key) { return f.get<uint32_t>(k(key)); }
float req_f32(const gguf::GgufFile& f, const char* key) { return f.get<float>(k(key)); }

void expect_u32(const gguf::GgufFile& f, const char* key, uint32_t got, uint32_t want) {
  if (got != want) fail(f, "metadata " + k(key) + " = " + std::to_string(got) + ", expected " + std::to_string(want));
}

std::string dims_str(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

struct Binder {
  const gguf::GgufFile& f;

  Tensor get(const std::string& name, std::initializer_list<quant::Type> types, std::vector<uint64_t> dims,
             bool required = true) const {
    const gguf::TensorInfo* ti = f.find_tensor(name);
    Tensor t;
    if (!ti) {
      if (required) fail(f, "missing tensor " + name);
      return t;
    }
    bool type_ok = false;
    std::string allowed;
    for (quant::Type ty : types) {
      type_ok |= ti->type == ty;
      if (!allowed.empty()) allowed += '|';
      allowed += quant::type_info(ty).name;
    }
    if (!type_ok)
      fail(f, "tensor " + name + " has type " + std::string(quant::type_info(ti->type).name) + ", expected " + allowed);
    if (ti->dims != dims)
      fail(f, "tensor " + name + " has shape " + dims_str(ti->dims) + ", expected " + dims_str(dims));
    t.name = name;
    t.type = ti->type;
    t.ndim = uint32_t(ti->dims.size());
    for (size_t i = 0; i < ti->dims.size() && i < 4; i++) t.ne[i] = ti->dims[i];
    t.data = reinterpret_cast<const uint8_t*>(f.data(*ti));
    t.bytes = ti->n_bytes;
    return t;
  }
};

}  // namespace

ModelConfig read_config(const gguf::GgufFile& f) {
  const std::string arch = f.get_or<std::string>("general.architecture", "");
  if (arch != "deepseek4") fail(f, "general.architecture is '" + arch + "', expected 'deepseek4'");
  ModelConfig c;
  c.n_layer = req_u32(f, "block_count");
  c.n_embd = req_u32(f, "embedding_length");
  c.n_vocab = req_u32(f, "vocab_size");
  c.n_head = req_u32(f, "attention.head_count");
  expect_u32(f, "attention.head_count_kv", req_u32(f, "attention.head_count_kv"), 1);
  c.head_dim = req_u32(f, "attention.key_length");
  expect_u32(f, "attention.value_length", req_u32(f, "attention.value_length"), c.head_dim);
  c.n_rot = req_u32(f, "rope.dimension_count");
  c.q_lora_rank = req_u32(f, "attention.q_lora_rank");
  c.out_lora_rank = req_u32(f, "attention.output_lora_rank");
  c.n_out_group = req_u32(f, "attention.output_group_count");
  c.n_expert = req_u32(f, "expert_count");
  c.n_expert_used = req_u32(f, "expert_used_count");
  c.n_ff = req_u32(f, "expert_feed_forward_length");
  expect_u32(f, "expert_shared_count", req_u32(f, "expert_shared_count"), 1);
  c.n_hash_layer = req_u32(f, "hash_layer_count");
  expect_u32(f, "expert_group_count", f.get_or<uint32_t>(k("expert_group_count"), 0), 0);
  expect_u32(f, "expert_group_used_count", f.get_or<uint32_t>(k("expert_group_used_count"), 0), 0);
  c.n_swa = req_u32(f, "attention.sliding_window");
  c.idx_heads = req_u32(f, "attention.indexer.head_count");
  c.idx_dim = req_u32(f, "attention.indexer.key_length");
  c.idx_top_k = req_u32(f, "attention.indexer.top_k");
  c.n_hc = req_u32(f, "hyper_connection.count");
  c.sinkhorn_iters = req_u32(f, "hyper_connection.sinkhorn_iterations");
  c.hc_eps = req_f32(f, "hyper_connection.epsilon");
  c.rms_eps = req_f32(f, "attention.layer_norm_rms_epsilon");
  c.rope_base = req_f32(f, "rope.freq_base");
  c.compress_rope_base = req_f32(f, "attention.compress_rope_freq_base");
  c.rope_scale_factor = req_f32(f, "rope.scaling.factor");
  c.yarn_beta_fast = req_f32(f, "rope.scaling.yarn_beta_fast");
  c.yarn_beta_slow = req_f32(f, "rope.scaling.yarn_beta_slow");
  c.rope_orig_ctx = f.get<uint64_t>(k("rope.scaling.original_context_length"));
  c.expert_weight_scale = req_f32(f, "expert_weights_scale");
  if (!f.get<bool>(k("expert_weights_norm"))) fail(f, "metadata deepseek4.expert_weights_norm must be true");
  c.context_length = f.get_or<uint64_t>(k("context_length"), 0);
  c.compress_ratio = f.get_array<uint32_t>(k("attention.compress_ratios"));
  c.swiglu_clamp = f.get_array<float>(k("swiglu_clamp_exp"));

  // Structural checks the graph relies on.
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(f, what);
  };
  need(c.n_layer > 0 && c.n_embd > 0 && c.n_vocab > 0 && c.n_head > 0, "deepseek4 dimensions must be positive");
  need(c.n_rot > 0 && c.n_rot % 2 == 0 && c.n_rot < c.head_dim && c.n_rot <= 512,
       "deepseek4.rope.dimension_count must be even and smaller than attention.key_length");
  need((c.head_dim - c.n_rot) % 64 == 0,
       "attention.key_length - rope.dimension_count must be a multiple of 64 (FP8 KV blocks)");
  need(c.n_out_group > 0 && c.n_head % c.n_out_group == 0,
       "attention.head_count must be a multiple of output_group_count");
  need(c.group_dim() % 32 == 0, "output group width must be a multiple of 32");
  need(c.n_hc >= 1 && c.n_hc <= 16, "hyper_connection.count must be in 1..16");
  need(c.n_expert_used >= 1 && c.n_expert_used <= 32 && c.n_expert_used <= c.n_expert && c.n_expert <= 1024,
       "expert_used_count must be in 1..min(32, expert_count), expert_count <= 1024");
  need(c.n_hash_layer <= c.n_layer, "hash_layer_count exceeds block_count");
  need(c.n_swa > 0, "attention.sliding_window must be positive");
  need(c.compress_ratio.size() >= c.n_layer,
       "metadata deepseek4.attention.compress_ratios has " + std::to_string(c.compress_ratio.size()) +
           " entries, fewer than deepseek4.block_count = " + std::to_string(c.n_layer));
  need(c.swiglu_clamp.size() >= c.n_layer,
       "metadata deepseek4.swiglu_clamp_exp has " + std::to_string(c.swiglu_clamp.size()) +
           " entries, fewer than deepseek4.block_count = " + std::to_string(c.n_layer));
  c.compress_ratio.resize(c.n_layer);
  c.swiglu_clamp.resize(c.n_layer);
  bool any4 = false;
  for (uint32_t il = 0; il < c.n_layer; il++) {
    const uint32_t r = c.compress_ratio[il];
    need(r == 0 || r == 4 || r == 128, "metadata deepseek4.attention.compress_ratios[" + std::to_string(il) +
                                           "] = " + std::to_string(r) + ", expected 0, 4 or 128");
    any4 |= r == 4;
  }
  if (any4) {
    need(c.idx_dim == 128, "attention.indexer.key_length must be 128 (Hadamard-128 indexer)");
    need(c.idx_heads > 0 && c.n_rot <= c.idx_dim, "indexer heads must be positive and wider than the RoPE tail");
  }
  need(c.rope_orig_ctx > 0, "rope.scaling.original_context_length must be positive");
  c.n_nope = c.head_dim - c.n_rot;
  return c;
}

LayerWeights bind_layer(const gguf::GgufFile& f, const ModelConfig& c, const std::string& p, uint32_t ratio, bool hash,
                        bool bias_required) {
  using T = quant::Type;
  Binder b{f};
  const uint64_t D = c.n_embd, hc = c.hc_dim(), mixn = c.hc_mix(), hd = c.head_dim;
  LayerWeights l;
  auto hcw = [&](const char* which) {
    HcWeights h;
    h.fn = b.get(p + "hc_" + which + "_fn.weight", {T::F16}, {hc, mixn});
    h.scale = b.get(p + "hc_" + which + "_scale.weight", {T::F32}, {3});
    h.base = b.get(p + "hc_" + which + "_base.weight", {T::F32}, {mixn});
    return h;
  };
  l.hc_attn = hcw("attn");
  l.hc_ffn = hcw("ffn");
  l.attn_norm = b.get(p + "attn_norm.weight", {T::F32}, {D});
  l.attn_q_a = b.get(p + "attn_q_a.weight", {T::Q8_0}, {D, c.q_lora_rank});
  l.attn_q_a_norm = b.get(p + "attn_q_a_norm.weight", {T::F32}, {c.q_lora_rank});
  l.attn_q_b = b.get(p + "attn_q_b.weight", {T::Q8_0}, {c.q_lora_rank, c.q_dim()});
  l.attn_kv = b.get(p + "attn_kv.weight", {T::Q8_0}, {D, hd});
  l.attn_kv_a_norm = b.get(p + "attn_kv_a_norm.weight", {T::F32}, {hd});
  l.attn_sinks = b.get(p + "attn_sinks.weight", {T::F32}, {c.n_head});
  l.attn_output_a =
      b.get(p + "attn_output_a.weight", {T::Q8_0}, {c.group_dim(), uint64_t(c.n_out_group) * c.out_lora_rank});
  l.attn_output_b = b.get(p + "attn_output_b.weight", {T::Q8_0}, {uint64_t(c.n_out_group) * c.out_lora_rank, D});
  if (ratio != 0) {
    const uint64_t W = (ratio == 4 ? 2 : 1) * hd;
    l.attn_compressor.ape = b.get(p + "attn_compressor_ape.weight", {T::F16}, {W, ratio});
    l.attn_compressor.kv = b.get(p + "attn_compressor_kv.weight", {T::F16}, {D, W});
    l.attn_compressor.gate = b.get(p + "attn_compressor_gate.weight", {T::F16}, {D, W});
    l.attn_compressor.norm = b.get(p + "attn_compressor_norm.weight", {T::F32}, {hd});
  }
  if (ratio == 4) {
    const uint64_t Wi = 2 * uint64_t(c.idx_dim);
    l.indexer_q_b = b.get(p + "indexer.attn_q_b.weight", {T::F16}, {c.q_lora_rank, uint64_t(c.idx_heads) * c.idx_dim});
    l.indexer_proj = b.get(p + "indexer.proj.weight", {T::F16}, {D, c.idx_heads});
    l.indexer_compressor.ape = b.get(p + "indexer_compressor_ape.weight", {T::F16}, {Wi, 4});
    l.indexer_compressor.kv = b.get(p + "indexer_compressor_kv.weight", {T::F16}, {D, Wi});
    l.indexer_compressor.gate = b.get(p + "indexer_compressor_gate.weight", {T::F16}, {D, Wi});
    l.indexer_compressor.norm = b.get(p + "indexer_compressor_norm.weight", {T::F32}, {c.idx_dim});
  }
  l.ffn_norm = b.get(p + "ffn_norm.weight", {T::F32}, {D});
  l.ffn_gate_inp = b.get(p + "ffn_gate_inp.weight", {T::F16}, {D, c.n_expert});
  l.exp_probs_b = b.get(p + "exp_probs_b.bias", {T::F32}, {c.n_expert}, bias_required);
  if (hash) l.ffn_gate_tid2eid = b.get(p + "ffn_gate_tid2eid.weight", {T::I32}, {c.n_expert_used, c.n_vocab});
  const auto routed = {T::IQ2_XXS, T::Q2_K, T::Q4_K, T::MXFP4};  // MXFP4: ds4ctl convert --recipe mxfp4
  l.ffn_gate_exps = b.get(p + "ffn_gate_exps.weight", routed, {D, c.n_ff, c.n_expert});
  l.ffn_up_exps = b.get(p + "ffn_up_exps.weight", routed, {D, c.n_ff, c.n_expert});
  l.ffn_down_exps = b.get(p + "ffn_down_exps.weight", routed, {c.n_ff, D, c.n_expert});
  if (l.ffn_up_exps.type != l.ffn_gate_exps.type)
    fail(f, "tensor " + l.ffn_up_exps.name + " must have the same type as " + l.ffn_gate_exps.name);
  l.ffn_gate_shexp = b.get(p + "ffn_gate_shexp.weight", {T::Q8_0}, {D, c.n_ff});
  l.ffn_up_shexp = b.get(p + "ffn_up_shexp.weight", {T::Q8_0}, {D, c.n_ff});
  l.ffn_down_shexp = b.get(p + "ffn_down_shexp.weight", {T::Q8_0}, {c.n_ff, D});
  return l;
}

Tensor bind_tensor(const gguf::GgufFile& f, const std::string& name, std::initializer_list<quant::Type> types,
                   std::vector<uint64_t> dims, bool required) {
  return Binder{f}.get(name, types, std::move(dims), required);
}

Weights bind_weights(const gguf::GgufFile& f, const ModelConfig& c) {
  using T = quant::Type;
  Binder b{f};
  Weights w;
  const uint64_t D = c.n_embd, hc = c.hc_dim();
  w.token_embd = b.get("token_embd.weight", {T::F16}, {D, c.n_vocab});
  w.output_hc_fn = b.get("output_hc_fn.weight", {T::F16}, {hc, c.n_hc});
  w.output_hc_scale = b.get("output_hc_scale.weight", {T::F32}, {1});
  w.output_hc_base = b.get("output_hc_base.weight", {T::F32}, {c.n_hc});
  w.output_norm = b.get("output_norm.weight", {T::F32}, {D});
  w.output = b.get("output.weight", {T::Q8_0}, {D, c.n_vocab});
  w.layers.resize(c.n_layer);
  for (uint32_t il = 0; il < c.n_layer; il++)
    w.layers[il] =
        bind_layer(f, c, "blk." + std::to_string(il) + ".", c.compress_ratio[il], il < c.n_hash_layer, false);
  return w;
}

}  // namespace model

namespace {

uint64_t fnv1a(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;
const ModelInfo& Model::info() const { return impl_->info; }
const gguf::GgufFile& Model::gguf() const { return impl_->file; }

std::shared_ptr<Model> Model::load(const std::filesystem::path& path, const LoadOptions& options,
                                   LoadProgress progress) {
  if (progress) progress(0.0, "mapping");
  gguf::MapOptions mo;
  mo.populate = options.populate;
  auto impl = std::make_unique<Impl>(gguf::GgufFile::open(path.string(), mo));
  if (progress) progress(0.2, "metadata");
  impl->cfg = model::read_config(impl->file);
  if (progress) progress(0.4, "tensors");
  impl->w = model::bind_weights(impl->file, impl->cfg);
  const model::ModelConfig& c = impl->cfg;

  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  impl->pool = std::make_unique<kernels::ThreadPool>(threads);
  impl->ex.pool = impl->pool.get();
  impl->ex.exact = options.arithmetic == Arithmetic::Exact;
  // Every weight product runs in the mode's order (docs/arithmetic.md): Exact is ds4's, Fast the
  // documented sliced order; the architecture only changes the speed.
  impl->ex.isa = quant::Isa{options.generic_kernels ? quant::Arch::Generic : quant::best_isa().arch,
                            impl->ex.exact ? quant::Order::Exact : quant::Order::Fast};
  impl->ex.observer = options.activation_observer;
  for (uint32_t il = 0; il < c.n_layer; il++) impl->rope.push_back(model::rope_params_for_layer(c, il));

  ModelInfo& info = impl->info;
  info.name = impl->file.get_or<std::string>("general.name", "");
  info.n_layer = c.n_layer;
  info.n_embd = c.n_embd;
  info.n_vocab = c.n_vocab;
  info.n_head = c.n_head;
  info.head_dim = c.head_dim;
  info.n_rot = c.n_rot;
  info.q_lora_rank = c.q_lora_rank;
  info.out_lora_rank = c.out_lora_rank;
  info.n_out_group = c.n_out_group;
  info.n_expert = c.n_expert;
  info.n_expert_used = c.n_expert_used;
  info.n_expert_shared = 1;
  info.expert_ff = c.n_ff;
  info.n_hash_layer = c.n_hash_layer;
  info.sliding_window = c.n_swa;
  info.indexer_heads = c.idx_heads;
  info.indexer_head_dim = c.idx_dim;
  info.indexer_top_k = c.idx_top_k;
  info.n_hc = c.n_hc;
  info.sinkhorn_iters = c.sinkhorn_iters;
  info.context_length = c.context_length;
  info.compress_ratios = c.compress_ratio;
  info.threads = threads;
  info.arithmetic = options.arithmetic;
  const auto& l0 = impl->w.layers[0];
  info.expert_types = std::string(quant::type_info(l0.ffn_gate_exps.type).name) + "/" +
                      std::string(quant::type_info(l0.ffn_up_exps.type).name) + "/" +
                      std::string(quant::type_info(l0.ffn_down_exps.type).name);
  uint64_t total = 0, experts = 0;
  for (const auto& t : impl->file.tensors()) total += t.n_bytes;
  for (const auto& l : impl->w.layers) experts += l.ffn_gate_exps.bytes + l.ffn_up_exps.bytes + l.ffn_down_exps.bytes;
  info.weight_bytes = total;
  const uint64_t embd_bytes = impl->w.token_embd.bytes;
  // Per token: every dense tensor, one embedding row, and n_used of n_expert experts per layer.
  info.active_weight_bytes_per_token =
      (total - experts - embd_bytes) + embd_bytes / c.n_vocab + experts / c.n_expert * c.n_expert_used;

  uint64_t fp = 0xcbf29ce484222325ULL;
  const uint32_t dims[] = {c.n_layer,     c.n_embd,        c.n_vocab,     c.n_head,    c.head_dim,      c.n_rot,
                           c.q_lora_rank, c.out_lora_rank, c.n_out_group, c.n_expert,  c.n_expert_used, c.n_ff,
                           c.n_swa,       c.idx_heads,     c.idx_dim,     c.idx_top_k, c.n_hc};
  fp = fnv1a(fp, dims, sizeof dims);
  fp = fnv1a(fp, c.compress_ratio.data(), c.compress_ratio.size() * sizeof(uint32_t));
  fp = fnv1a(fp, impl->w.output.data, std::min<uint64_t>(impl->w.output.bytes, 4096));
  impl->fingerprint = fp;
  if (options.device == ComputeDevice::Cuda) {
    if (progress) progress(0.9, "device");
    impl->device = model::device::place_weights(*impl, options.device_reserve_bytes, info.placement);
    impl->device_reserve = options.device_reserve_bytes;
    const Model::Impl* m = impl.get();
    impl->device_scratch = std::make_shared<model::ScratchPool<model::device::DevicePass>>(
        [m] { return std::make_unique<model::device::DevicePass>(*m, *m->device); });
    info.device = ComputeDevice::Cuda;
  }
  if (progress) progress(1.0, "ready");
  return std::shared_ptr<Model>(new Model(std::move(impl)));
}

}  // namespace ds4
