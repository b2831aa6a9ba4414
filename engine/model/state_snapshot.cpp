// Context snapshots: the complete state of a sequence as one byte string, so the serving layer
// can checkpoint a conversation to disk and resume it bit-exactly. Restore parses into a fresh
// state and only swaps it in when everything checked out, so a bad snapshot leaves the context
// as it was. The layout: docs/kv-checkpoints.md §context-snapshots.
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/model/context_state.hpp"
#include "engine/model/model_impl.hpp"

namespace ds4::model {
namespace {

constexpr uint32_t kMagic = 0x43345344;  // "DS4C"
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 4 * 4 + 8 + 4 * 4 + 8 + 8;

struct Writer {
  std::vector<uint8_t>& out;
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_floats(const float* p, size_t n) {
    const auto* b = reinterpret_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n * sizeof(float));
  }
};

struct Reader {
  std::span<const uint8_t> in;
  size_t pos = 0;
  void need(size_t n, const char* what) {
    if (in.size() - pos < n)
      throw std::runtime_error(std::string("snapshot is truncated while reading ") + what + " at byte " +
                               std::to_string(pos));
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, in.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  void get_floats(float* p, size_t n, const char* what) {
    need(n * sizeof(float), what);
    std::memcpy(p, in.data() + pos, n * sizeof(float));
    pos += n * sizeof(float);
  }
};

}  // namespace

std::vector<uint8_t> write_snapshot(const Model::Impl& m, const Context::State& st) {
  const ModelConfig& c = m.cfg;
  // Size first, so the snapshot is built in one buffer (it can be ~1 GiB at long contexts).
  uint64_t floats = st.tokens.empty() ? 0 : c.n_vocab;
  for (const LayerState& l : st.layers) {
    floats += uint64_t(l.n_visible_raw()) * l.head_dim;
    if (l.ratio != 0) floats += uint64_t(l.comp.n) * l.comp.dim + l.attn_cmp.kv.size() + l.attn_cmp.score.size();
    if (l.ratio == 4)
      floats += uint64_t(l.index_comp.n) * l.index_comp.dim + l.index_cmp.kv.size() + l.index_cmp.score.size();
  }
  const uint64_t payload_bytes = st.tokens.size() * 4 + floats * 4 + st.layers.size() * 8 + [&] {
    uint64_t n = 0;
    for (const LayerState& l : st.layers) n += (l.ratio != 0) + (l.ratio == 4);
    return n * 4;
  }();
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + payload_bytes);
  out.resize(kHeaderBytes);
  Writer w{out};
  for (int32_t t : st.tokens) w.put(t);
  if (!st.tokens.empty()) w.put_floats(st.logits.data(), c.n_vocab);
  for (const LayerState& l : st.layers) {
    w.put(l.ratio);
    w.put(l.n_visible_raw());
    for (uint32_t i = 0; i < l.n_visible_raw(); i++) w.put_floats(l.visible_raw_row(i), l.head_dim);
    if (l.ratio != 0) {
      w.put(l.comp.n);
      w.put_floats(l.comp.data.data(), size_t(l.comp.n) * l.comp.dim);
      w.put_floats(l.attn_cmp.kv.data(), l.attn_cmp.kv.size());
      w.put_floats(l.attn_cmp.score.data(), l.attn_cmp.score.size());
    }
    if (l.ratio == 4) {
      w.put(l.index_comp.n);
      w.put_floats(l.index_comp.data.data(), size_t(l.index_comp.n) * l.index_comp.dim);
      w.put_floats(l.index_cmp.kv.data(), l.index_cmp.kv.size());
      w.put_floats(l.index_cmp.score.data(), l.index_cmp.score.size());
    }
  }
  if (out.size() != kHeaderBytes + payload_bytes) throw std::logic_error("snapshot size accounting is wrong");
  std::vector<uint8_t> header;
  Writer h{header};
  h.put(kMagic);
  h.put(kVersion);
  h.put(m.fingerprint);
  h.put(c.n_layer);
  h.put(c.n_vocab);
  h.put(c.head_dim);
  h.put(c.idx_dim);
  h.put(uint32_t(st.tokens.size()));
  h.put(uint32_t(0));
  h.put(payload_bytes);
  h.put(uint64_t(XXH64(out.data() + kHeaderBytes, payload_bytes, 0)));
  std::memcpy(out.data(), header.data(), kHeaderBytes);
  return out;
}

void read_snapshot(const Model::Impl& m, std::span<const uint8_t> bytes, uint32_t capacity, uint32_t rollback,
                   Context::State& out) {
  const ModelConfig& c = m.cfg;
  Reader r{bytes};
  if (bytes.size() < kHeaderBytes)
    throw std::runtime_error("snapshot is truncated: " + std::to_string(bytes.size()) + " bytes, header needs " +
                             std::to_string(kHeaderBytes));
  if (r.get<uint32_t>("magic") != kMagic) throw std::runtime_error("not a ds4 context snapshot (bad magic)");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kVersion)
    throw std::runtime_error("snapshot version " + std::to_string(version) + " is not supported (expected " +
                             std::to_string(kVersion) + ")");
  if (r.get<uint64_t>("fingerprint") != m.fingerprint)
    throw std::runtime_error("snapshot was taken with a different model");
  const uint32_t n_layer = r.get<uint32_t>("n_layer"), n_vocab = r.get<uint32_t>("n_vocab");
  const uint32_t head_dim = r.get<uint32_t>("head_dim"), idx_dim = r.get<uint32_t>("idx_dim");
  if (n_layer != c.n_layer || n_vocab != c.n_vocab || head_dim != c.head_dim || idx_dim != c.idx_dim)
    throw std::runtime_error("snapshot dimensions do not match the model");
  const uint32_t n_tokens = r.get<uint32_t>("n_tokens");
  r.get<uint32_t>("reserved");
  const uint64_t payload_bytes = r.get<uint64_t>("payload size");
  const uint64_t checksum = r.get<uint64_t>("checksum");
  if (bytes.size() - kHeaderBytes != payload_bytes)
    throw std::runtime_error("snapshot payload is " + std::to_string(bytes.size() - kHeaderBytes) +
                             " bytes, header says " + std::to_string(payload_bytes) + " (truncated or padded)");
  if (XXH64(bytes.data() + kHeaderBytes, payload_bytes, 0) != checksum)
    throw std::runtime_error("snapshot checksum mismatch (corrupted)");
  if (n_tokens > capacity)
    throw std::runtime_error("snapshot holds " + std::to_string(n_tokens) + " tokens, context capacity is " +
                             std::to_string(capacity));

  out.capacity = capacity;
  out.layers = make_layer_states(c, capacity, rollback);
  out.tokens.resize(n_tokens);
  for (uint32_t i = 0; i < n_tokens; i++) {
    out.tokens[i] = r.get<int32_t>("tokens");
    if (out.tokens[i] < 0 || uint32_t(out.tokens[i]) >= c.n_vocab)
      throw std::runtime_error("snapshot token id out of range");
  }
  if (n_tokens) {
    out.logits.resize(c.n_vocab);
    r.get_floats(out.logits.data(), c.n_vocab, "logits");
  }
  for (uint32_t il = 0; il < c.n_layer; il++) {
    LayerState& l = out.layers[il];
    const std::string where = "layer " + std::to_string(il);
    if (r.get<uint32_t>("layer ratio") != l.ratio)
      throw std::runtime_error("snapshot " + where + ": compression ratio mismatch");
    const uint32_t n_raw = r.get<uint32_t>("raw count");
    if (n_raw > l.raw_window || n_raw > n_tokens || n_raw != std::min(n_tokens, l.raw_window))
      throw std::runtime_error("snapshot " + where + ": raw window count out of range");
    for (uint32_t i = 0; i < n_raw; i++) r.get_floats(l.push_raw_slot(), l.head_dim, "raw rows");
    auto rows = [&](RowStore& rs, const char* what) {
      const uint32_t n = r.get<uint32_t>(what);
      if (n > rs.cap_rows || uint64_t(n) * l.ratio > n_tokens)
        throw std::runtime_error("snapshot " + where + ": " + what + " out of range");
      for (uint32_t i = 0; i < n; i++) r.get_floats(rs.append(), rs.dim, what);
    };
    if (l.ratio != 0) {
      rows(l.comp, "compressed rows");
      r.get_floats(l.attn_cmp.kv.data(), l.attn_cmp.kv.size(), "compressor state");
      r.get_floats(l.attn_cmp.score.data(), l.attn_cmp.score.size(), "compressor state");
    }
    if (l.ratio == 4) {
      rows(l.index_comp, "indexer rows");
      r.get_floats(l.index_cmp.kv.data(), l.index_cmp.kv.size(), "indexer compressor state");
      r.get_floats(l.index_cmp.score.data(), l.index_cmp.score.size(), "indexer compressor state");
    }
  }
  if (r.pos != bytes.size()) throw std::runtime_error("snapshot has trailing bytes after the last layer");
  // Compressor input history is not part of a snapshot: rollback starts afresh here.
  for (LayerState& l : out.layers) {
    l.attn_hist.forget(n_tokens);
    l.index_hist.forget(n_tokens);
    l.set_base(n_tokens);
  }
}

}  // namespace ds4::model
