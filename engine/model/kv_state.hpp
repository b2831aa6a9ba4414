#pragma once
// Per-layer attention state of one Context: the raw sliding window (a ring of the last n_swa
// KV rows, read oldest to newest), the append-only compressed KV rows (ratio 4 and 128
// layers), the indexer's compressed rows (ratio 4), and the streaming compressor states that
// hold the partial window. This is everything a snapshot must carry besides tokens and logits.
#include <cstdint>
#include <vector>

namespace ds4::model {

// Rolling compressor window: `rows` rows of `width` kv values and scores. Ratio 4 keeps two
// windows (coff = 2, width = 2 * head_dim, rows 0..3 previous, 4..7 current); ratio 128 one.
struct CompressorState {
  uint32_t ratio = 0, head_dim = 0, coff = 0, width = 0, rows = 0;
  std::vector<float> kv, score;

  void init(uint32_t ratio_, uint32_t head_dim_);
  void reset();  // kv 0, score -1e30
};

// Append-only rows of `dim` floats; capacity grows geometrically (no per-token allocation).
struct RowStore {
  uint32_t dim = 0, n = 0, cap_rows = 0;  // cap_rows: hard limit from the context length
  std::vector<float> data;

  void init(uint32_t dim_, uint32_t cap_rows_) {
    dim = dim_;
    cap_rows = cap_rows_;
    n = 0;
    data.clear();
  }
  const float* row(uint32_t i) const { return data.data() + uint64_t(i) * dim; }
  float* append();  // throws std::length_error past cap_rows
  void clear() { n = 0; }
};

// The (kv, score) rows recently fed to a compressor, by absolute position, kept so that a
// truncation (speculative-decoding rollback) can rebuild the compressor's partial window.
struct CompressorHistory {
  uint32_t width = 0, cap = 0;
  uint64_t lo = 0, hi = 0;  // positions [lo, hi) are held
  std::vector<float> kv, score;

  void init(uint32_t width_, uint32_t cap_);
  void record(uint64_t pos, const float* kv_row, const float* score_row);
  const float* kv_at(uint64_t pos) const { return kv.data() + (pos % cap) * width; }
  const float* score_at(uint64_t pos) const { return score.data() + (pos % cap) * width; }
  void forget(uint64_t pos) { lo = hi = pos; }  // nothing before pos is known
};

struct LayerState {
  uint32_t ratio = 0;
  // Raw KV ring: logical row i (0 = oldest kept) lives at ((head + i) % cap). The ring keeps
  // raw_cap >= raw_window rows so a rollback still finds a full window; attention reads the
  // last min(n_raw, raw_window) rows.
  uint32_t raw_cap = 0, raw_window = 0, n_raw = 0, raw_head = 0, head_dim = 0;
  std::vector<float> raw;
  RowStore comp;  // attention compressed rows (ratio != 0)
  CompressorState attn_cmp;
  RowStore index_comp;  // indexer compressed rows (ratio == 4)
  CompressorState index_cmp;

  CompressorHistory attn_hist, index_hist;
  // Compressor states at base_pos (the last restore or reset), the other starting point a
  // rollback can replay from when the history does not reach back to a window start.
  CompressorState attn_base, index_base;
  uint64_t base_pos = 0;
  void set_base(uint64_t pos) {
    attn_base = attn_cmp;
    index_base = index_cmp;
    base_pos = pos;
  }

  const float* raw_row(uint32_t i) const { return raw.data() + uint64_t((raw_head + i) % raw_cap) * head_dim; }
  uint32_t n_visible_raw() const { return n_raw < raw_window ? n_raw : raw_window; }
  const float* visible_raw_row(uint32_t i) const { return raw_row(n_raw - n_visible_raw() + i); }
  float* push_raw_slot();  // slot for the newest row (evicts the oldest when full)
  void reset();
  uint64_t bytes() const;
};

}  // namespace ds4::model
