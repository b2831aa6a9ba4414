// Launches the MoE kernels of kernels/moe.cuh and moe_gemm.cuh: the router one warp per token, the
// expert matvecs four warps a block (a row each) per pair or per tile of grouped pairs (the
// grouping one block), the grouped tiles of more than 8 pairs as GEMM tiles (256 threads a
// block), the elementwise steps 256 threads a block.
#include "engine/cuda/moe.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ds4::cuda {
namespace {

// The expert kernels of a routed format: matvec per pair and over grouped tiles, the GEMM over
// grouped tiles with the weight rows of its output tile (nullptr: none).
struct ExpertKernels {
  const char* per_pair = nullptr;
  const char* grouped = nullptr;
  const char* gemm = nullptr;
  int gemm_rows = 0;
};
ExpertKernels expert_kernels(quant::Type type) {
  switch (type) {
    case quant::Type::MXFP4:
      return {"ds4_moe_matvec_mxfp4", "ds4_moe_matvec_grouped_mxfp4", "ds4_moe_gemm_grouped_mxfp4", 64};
    case quant::Type::Q2_K:
      return {"ds4_moe_matvec_q2_k", "ds4_moe_matvec_grouped_q2_k", "ds4_moe_gemm_grouped_q2_k", 32};
    case quant::Type::Q4_K:
      return {"ds4_moe_matvec_q4_k", "ds4_moe_matvec_grouped_q4_k", "ds4_moe_gemm_grouped_q4_k", 32};
    case quant::Type::IQ2_XXS:
      return {"ds4_moe_matvec_iq2_xxs", "ds4_moe_matvec_grouped_iq2_xxs", "ds4_moe_gemm_grouped_iq2_xxs", 32};
    default: return {};
  }
}

constexpr int kMoeGroupTile = 32;       // kernels/moe.cuh
constexpr int kMaxGroupExperts = 1024;  // kernels/moe.cuh kMaxRouterExperts

void need(DeviceSpan b, size_t bytes, const char* what) {
  if (b.bytes() < bytes)
    throw std::invalid_argument(std::string("CUDA MoE: ") + what + " buffer of " + std::to_string(b.bytes()) +
                                " bytes, need " + std::to_string(bytes));
}

constexpr unsigned kThreads = 256;

size_t experts_bytes(quant::Type type, int64_t n_expert, int64_t rows, int64_t cols) {
  if (expert_kernels(type).per_pair == nullptr)
    throw std::invalid_argument(std::string("CUDA MoE: no expert kernel for ") +
                                std::string(quant::type_info(type).name));
  if (n_expert <= 0 || rows <= 0 || cols <= 0 || cols % quant::type_info(type).block_elems != 0)
    throw std::invalid_argument("CUDA MoE: bad expert shape " + std::to_string(n_expert) + "x" + std::to_string(rows) +
                                "x" + std::to_string(cols));
  return size_t(quant::row_bytes(type, uint64_t(cols))) * size_t(rows) * size_t(n_expert);
}

// What the expert launchers (per pair, grouped) read and write: n_pairs pairs' activation rows
// (one per pairs_per_act pairs, act_row_bytes apart) and output rows. Returns the format's kernels;
// throws std::invalid_argument on a format without them or buffers too small.
ExpertKernels check_expert_io(const DeviceExperts& w, int n_pairs, int pairs_per_act, DeviceSpan act,
                              size_t act_row_bytes, DeviceSpan out) {
  const ExpertKernels k = expert_kernels(w.type);
  if (k.per_pair == nullptr) throw std::invalid_argument("CUDA MoE: no expert kernel for this weight format");
  if (n_pairs < 1 || pairs_per_act < 1)
    throw std::invalid_argument("CUDA MoE: " + std::to_string(n_pairs) + " pairs, " + std::to_string(pairs_per_act) +
                                " per activation row");
  const size_t row = quant::act_row_bytes(quant::traits(w.type).vec_dot_type, w.cols);
  const int n_act = (n_pairs + pairs_per_act - 1) / pairs_per_act;
  if (act_row_bytes < row || act_row_bytes % 4 != 0)
    throw std::invalid_argument("CUDA MoE: activation rows " + std::to_string(act_row_bytes) + " bytes apart, need " +
                                std::to_string(row) + " and a multiple of 4");
  need(act, act_row_bytes * size_t(n_act - 1) + row, "activation");
  need(out, sizeof(float) * size_t(n_pairs) * size_t(w.rows), "output");
  return k;
}

int64_t expert_bytes(const DeviceExperts& w) { return int64_t(quant::row_bytes(w.type, uint64_t(w.cols))) * w.rows; }

}  // namespace

DeviceExperts upload_experts(quant::Type type, const void* data, int64_t n_expert, int64_t rows, int64_t cols) {
  const size_t bytes = experts_bytes(type, n_expert, rows, cols);
  DeviceExperts w{type, n_expert, rows, cols, {}, DeviceBuffer(bytes)};
  w.owned.upload(data, bytes);
  w.data = w.owned;
  return w;
}

DeviceExperts experts_over(quant::Type type, DeviceSpan data, int64_t n_expert, int64_t rows, int64_t cols) {
  const size_t bytes = experts_bytes(type, n_expert, rows, cols);
  if (data.bytes() != bytes)
    throw std::invalid_argument("CUDA MoE: " + std::to_string(data.bytes()) + " bytes are not " +
                                std::to_string(n_expert) + " experts of " + std::to_string(rows) + "x" +
                                std::to_string(cols) + " " + std::string(quant::type_info(type).name) + " (" +
                                std::to_string(bytes) + ")");
  return DeviceExperts{type, n_expert, rows, cols, data, {}};
}

void moe_route(DeviceSpan logits, int T, const RouterArgs& a, DeviceSpan ids, DeviceSpan weights) {
  if (T < 1 || a.n_expert < 1 || a.n_expert > 1024 || a.n_used < 1 || a.n_used > 32 || a.n_used > a.n_expert)
    throw std::invalid_argument("CUDA MoE router: " + std::to_string(T) + " tokens, " + std::to_string(a.n_used) +
                                " of " + std::to_string(a.n_expert) + " experts is outside the limits");
  const size_t te = sizeof(float) * size_t(T) * size_t(a.n_expert), tk = 4 * size_t(T) * size_t(a.n_used);
  need(logits, te, "logits");
  if (a.probs.ptr()) need(a.probs, te, "probs");
  need(ids, tk, "ids");
  need(weights, tk, "weights");
  if (a.bias.ptr()) need(a.bias, sizeof(float) * size_t(a.n_expert), "bias");
  if (a.tid2eid.ptr()) {
    if (!a.tokens.ptr() || a.n_vocab < 1)
      throw std::invalid_argument("CUDA MoE router: tid2eid without tokens or n_vocab");
    need(a.tid2eid, 4 * size_t(a.n_vocab) * size_t(a.n_used), "tid2eid");
    need(a.tokens, 4 * size_t(T), "tokens");
  }
  if (a.error.ptr()) need(a.error, 4, "error");
  uint64_t lp = logits.ptr(), bp = a.bias.ptr(), hp = a.tid2eid.ptr(), tp = a.tokens.ptr();
  uint64_t pp = a.probs.ptr(), ip = ids.ptr(), wp = weights.ptr(), ep = a.error.ptr();
  int32_t n_expert = a.n_expert, k = a.n_used;
  int64_t n_vocab = a.n_vocab;
  float scale = a.scale;
  void* args[] = {&lp, &n_expert, &k, &bp, &hp, &n_vocab, &tp, &scale, &pp, &ip, &wp, &ep};
  Device::open().launch("ds4_moe_route", unsigned(T), 32, 0, args);
}

void moe_expert_matvec(const DeviceExperts& w, DeviceSpan ids, int n_pairs, DeviceSpan act, size_t act_row_bytes,
                       int pairs_per_act, DeviceSpan out) {
  const char* name = check_expert_io(w, n_pairs, pairs_per_act, act, act_row_bytes, out).per_pair;
  need(ids, 4 * size_t(n_pairs), "ids");
  uint64_t wp = w.data.ptr(), ip = ids.ptr(), ap = act.ptr(), op = out.ptr();
  int64_t eb = expert_bytes(w), rows = w.rows, cols = w.cols, stride = int64_t(act_row_bytes);
  int32_t n_expert = int32_t(w.n_expert), per = pairs_per_act;
  void* args[] = {&wp, &eb, &n_expert, &rows, &cols, &ip, &ap, &stride, &per, &op};
  const int64_t row_blocks = (w.rows + 3) / 4;  // kernels/matvec.cuh: four warps a block
  Device::open().launch(name, unsigned(row_blocks * n_pairs), 128, 0, args);
}

int32_t moe_group_max_tiles(int n_pairs, int n_expert) {
  return (n_pairs + kMoeGroupTile - 1) / kMoeGroupTile + std::min(n_pairs, n_expert + 1);  // a partial tile per bucket
}

void moe_group(DeviceSpan ids, int n_expert, const MoeGroups& g) {
  if (g.n_pairs < 1 || n_expert < 1 || n_expert > kMaxGroupExperts)
    throw std::invalid_argument("CUDA MoE grouping: " + std::to_string(g.n_pairs) + " pairs over " +
                                std::to_string(n_expert) + " experts");
  need(ids, 4 * size_t(g.n_pairs), "ids");
  need(g.order, 4 * size_t(g.n_pairs), "order");
  need(g.tiles, 12 * size_t(moe_group_max_tiles(g.n_pairs, n_expert)), "tiles");
  need(g.n_tiles, 4, "tile count");
  uint64_t ip = ids.ptr(), op = g.order.ptr(), tp = g.tiles.ptr(), np = g.n_tiles.ptr();
  int32_t n = g.n_pairs, e = n_expert;
  void* args[] = {&ip, &n, &e, &op, &tp, &np};
  Device::open().launch("ds4_moe_group", 1, 1024, 0, args);
}

void moe_expert_grouped(const DeviceExperts& w, const MoeGroups& g, DeviceSpan act, size_t act_row_bytes,
                        int pairs_per_act, DeviceSpan out) {
  const ExpertKernels k = check_expert_io(w, g.n_pairs, pairs_per_act, act, act_row_bytes, out);
  if (g.max_tiles < moe_group_max_tiles(g.n_pairs, int(w.n_expert)))
    throw std::invalid_argument("CUDA MoE: " + std::to_string(g.n_pairs) + " grouped pairs, " +
                                std::to_string(g.max_tiles) + " tiles");
  uint64_t wp = w.data.ptr(), op = g.order.ptr(), tp = g.tiles.ptr(), np = g.n_tiles.ptr(), ap = act.ptr(),
           outp = out.ptr();
  int64_t eb = expert_bytes(w), rows = w.rows, cols = w.cols, stride = int64_t(act_row_bytes);
  int32_t n_expert = int32_t(w.n_expert), per = pairs_per_act;
  void* args[] = {&wp, &eb, &n_expert, &rows, &cols, &op, &tp, &np, &ap, &stride, &per, &outp};
  const int64_t row_tiles = (w.rows + k.gemm_rows - 1) / k.gemm_rows;
  const int64_t row_blocks = (w.rows + 3) / 4;  // kernels/matvec.cuh: four warps a block
  if (row_blocks * g.max_tiles > 0x7fffffff)
    throw std::invalid_argument("CUDA MoE: " + std::to_string(g.max_tiles) + " tiles of " + std::to_string(w.rows) +
                                " rows (grid too large)");
  Device::open().launch(k.gemm, unsigned(row_tiles * g.max_tiles), 256, 0, args);
  Device::open().launch(k.grouped, unsigned(row_blocks * g.max_tiles), 128, 0, args);
}

void moe_swiglu(DeviceSpan gate, DeviceSpan up, DeviceSpan weights, int64_t n_rows, int64_t n_ff, float clamp,
                DeviceSpan mid) {
  const int64_t n = n_rows * n_ff;
  if (n_rows < 1 || n_ff < 1) throw std::invalid_argument("CUDA MoE swiglu: empty shape");
  need(gate, sizeof(float) * size_t(n), "gate");
  need(up, sizeof(float) * size_t(n), "up");
  need(mid, sizeof(float) * size_t(n), "mid");
  if (weights.ptr()) need(weights, sizeof(float) * size_t(n_rows), "weights");
  uint64_t gp = gate.ptr(), upp = up.ptr(), wp = weights.ptr(), mp = mid.ptr();
  void* args[] = {&gp, &upp, &wp, &n_rows, &n_ff, &clamp, &mp};
  Device::open().launch("ds4_moe_swiglu", unsigned((n + kThreads - 1) / kThreads), kThreads, 0, args);
}

void moe_sum(DeviceSpan down, DeviceSpan shared, int64_t T, int n_used, int64_t n_embd, DeviceSpan out) {
  if (T < 1 || n_used < 1 || n_embd < 1) throw std::invalid_argument("CUDA MoE sum: empty shape");
  const size_t tn = sizeof(float) * size_t(T) * size_t(n_embd);
  need(down, tn * size_t(n_used), "down");
  need(shared, tn, "shared");
  need(out, tn, "output");
  uint64_t dp = down.ptr(), sp = shared.ptr(), op = out.ptr();
  int32_t k = n_used;
  void* args[] = {&dp, &sp, &T, &k, &n_embd, &op};
  const int64_t n = T * n_embd;
  Device::open().launch("ds4_moe_sum", unsigned((n + kThreads - 1) / kThreads), kThreads, 0, args);
}

}  // namespace ds4::cuda
