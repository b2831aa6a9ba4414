// Launches kernels/indexer.cuh: scores (one 256-thread block per row, a warp per head), top-k (by
// rank in 256-thread blocks up to 4096 rows, else the one-block radix select), then the one-block
// compaction into the visible row list; for many query rows, the same with one radix block each.
#include "engine/cuda/indexer.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {
namespace {
constexpr int32_t kRankTopkMaxRows = 4096;  // above: the O(n) radix selection
}  // namespace

void indexer_select(DeviceSpan q, DeviceSpan w, int32_t n_head, int32_t dim, float wscale, DeviceSpan index_rows,
                    int32_t n, int32_t top_k, DeviceSpan scores, DeviceSpan mask, DeviceSpan comp_rows,
                    int32_t comp_dim, DeviceSpan visible, int32_t visible_offset, DeviceSpan count) {
  const auto floats = [](int64_t k) { return sizeof(float) * static_cast<size_t>(k); };
  const bool select = n > top_k;
  if (n < 0 || top_k < 0 || n_head <= 0 || n_head > 256 || dim <= 0 || comp_dim <= 0 || visible_offset < 0 ||
      (select && (q.bytes() < floats(int64_t(n_head) * dim) || w.bytes() < floats(n_head) ||
                  index_rows.bytes() < floats(int64_t(n) * dim) || scores.bytes() < floats(n))) ||
      mask.bytes() < size_t(n) || comp_rows.bytes() < floats(int64_t(n) * comp_dim) ||
      visible.bytes() < sizeof(uint64_t) * (size_t(visible_offset) + size_t(n)) || count.bytes() < sizeof(int32_t))
    throw std::invalid_argument("CUDA indexer_select: " + std::to_string(n) + " rows, top_k " + std::to_string(top_k) +
                                ", " + std::to_string(n_head) + " heads of " + std::to_string(dim) +
                                " do not fit the buffers");
  Device& dev = Device::open();
  uint64_t qp = q.ptr(), wp = w.ptr(), rp = index_rows.ptr(), sp = scores.ptr(), mp = mask.ptr();
  if (select) {
    void* a1[] = {&qp, &wp, &n_head, &dim, &wscale, &rp, &sp};
    dev.launch("ds4_indexer_scores", static_cast<unsigned>(n), 256, 0, a1);
    void* a2[] = {&sp, &n, &top_k, &mp};
    if (n <= kRankTopkMaxRows) dev.launch("ds4_indexer_topk", static_cast<unsigned>((n + 255) / 256), 256, 0, a2);
    else dev.launch("ds4_indexer_topk_radix", 1, 1024, 0, a2);
  }
  int32_t all = select ? 0 : 1;
  int64_t cd = comp_dim;
  uint64_t cp = comp_rows.ptr(), vp = visible.ptr() + sizeof(uint64_t) * uint64_t(visible_offset), np = count.ptr();
  void* a3[] = {&mp, &n, &top_k, &all, &cp, &cd, &vp, &np};
  dev.launch("ds4_indexer_compact", 1, 1024, 0, a3);
}

void indexer_select_rows(DeviceSpan choices, int32_t R, int64_t total, int32_t n_head, int32_t dim, float wscale,
                         int32_t top_k, int32_t comp_dim, DeviceSpan scores, DeviceSpan mask) {
  if (R < 0 || total < R || total > (int64_t(1) << 31) - 1 || top_k < 0 || n_head <= 0 || n_head > 256 || dim <= 0 ||
      comp_dim <= 0 || choices.bytes() < sizeof(IndexerChoice) * size_t(R) ||
      scores.bytes() < sizeof(float) * size_t(total) || mask.bytes() < size_t(total))
    throw std::invalid_argument("CUDA indexer_select_rows: " + std::to_string(R) + " rows, " + std::to_string(total) +
                                " indexer rows, " + std::to_string(n_head) + " heads of " + std::to_string(dim) +
                                " do not fit the buffers");
  if (R == 0) return;
  Device& dev = Device::open();
  uint64_t cp = choices.ptr(), sp = scores.ptr(), mp = mask.ptr();
  int64_t cd = comp_dim;
  void* a1[] = {&cp, &R, &n_head, &dim, &wscale, &sp};
  dev.launch("ds4_indexer_scores_rows", static_cast<unsigned>(total), 256, 0, a1);
  void* a2[] = {&cp, &top_k, &sp, &mp};
  dev.launch("ds4_indexer_topk_rows", static_cast<unsigned>(R), 1024, 0, a2);
  void* a3[] = {&cp, &top_k, &mp, &cd};
  dev.launch("ds4_indexer_compact_rows", static_cast<unsigned>(R), 1024, 0, a3);
}

void visible_rows_all(DeviceSpan comp_rows, int32_t n, int32_t comp_dim, DeviceSpan visible, int32_t visible_offset,
                      DeviceSpan count) {
  if (n < 0 || comp_dim <= 0 || visible_offset < 0 ||
      comp_rows.bytes() < sizeof(float) * size_t(n) * size_t(comp_dim) ||
      visible.bytes() < sizeof(uint64_t) * (size_t(visible_offset) + size_t(n)) || count.bytes() < sizeof(int32_t))
    throw std::invalid_argument("CUDA visible_rows_all: " + std::to_string(n) + " rows of " + std::to_string(comp_dim) +
                                " do not fit the buffers");
  uint64_t mp = 0, cp = comp_rows.ptr(), vp = visible.ptr() + sizeof(uint64_t) * uint64_t(visible_offset),
           np = count.ptr();
  int32_t top_k = n, all = 1;
  int64_t cd = comp_dim;
  void* args[] = {&mp, &n, &top_k, &all, &cp, &cd, &vp, &np};
  Device::open().launch("ds4_indexer_compact", 1, 1024, 0, args);
}

}  // namespace ds4::cuda
