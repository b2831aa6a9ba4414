// Activation-energy accumulation and the imatrix result; see imatrix_collector.hpp.
#include "toolchain/imatrix/imatrix_collector.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/loaded_model/loaded_model.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace ds4::imatrix {

void Collector::observe(std::string_view tensor, int expert, const float* row, int64_t cols) {
  auto it = acc_.find(tensor);
  if (it == acc_.end()) it = acc_.emplace(std::string(tensor), Accum{cols, {}, {}}).first;
  Accum& a = it->second;
  const size_t slot = expert < 0 ? 0 : size_t(expert);
  if (a.rows.size() <= slot) {
    a.rows.resize(slot + 1, 0);
    a.sum2.resize((slot + 1) * size_t(cols), 0.0);
  }
  double* s = a.sum2.data() + slot * size_t(cols);
  for (int64_t i = 0; i < cols; ++i) s[i] += double(row[i]) * row[i];
  ++a.rows[slot];
}

CollectResult collect(const std::string& model_path, const std::string& text, const CollectOptions& opt) {
  Collector col;
  LoadOptions lo;
  lo.threads = opt.threads;
  lo.activation_observer = &col;
  LoadedModel loaded = load_model(model_path, lo);
  const std::shared_ptr<Model> model = std::move(loaded.model);
  const tokenizer::Tokenizer& tok = loaded.tokenizer;
  const std::vector<int32_t> ids = tok.encode(text);
  const uint32_t n = std::max<uint32_t>(2, opt.chunk_tokens);
  if (ids.size() < n - 1)
    throw std::runtime_error("calibration text has " + std::to_string(ids.size()) +
                             " tokens, fewer than one chunk of " + std::to_string(n));
  CollectResult r;
  for (size_t at = 0; at + (n - 1) <= ids.size(); at += n - 1) {
    if (opt.max_chunks && r.chunks >= opt.max_chunks) break;
    std::vector<int32_t> chunk{tok.bos()};
    chunk.insert(chunk.end(), ids.begin() + at, ids.begin() + at + (n - 1));
    Context ctx(model, {.context_length = n + 1});
    ctx.prefill(chunk);
    r.tokens += chunk.size();
    ++r.chunks;
  }

  const uint32_t n_expert = model->info().n_expert;
  r.imatrix.chunks = int32_t(r.chunks);
  r.imatrix.dataset = opt.dataset;
  for (const auto& [name, a] : col.accums()) {
    const bool routed = name.find("_exps.weight") != std::string::npos;
    const size_t slots = routed ? n_expert : 1;
    convert::ImatrixEntry e;
    e.name = name;
    e.ncall = int32_t(r.chunks);
    e.values.assign(slots * size_t(a.cols), 1.0f);
    uint32_t hit = 0;
    for (size_t s = 0; s < slots && s < a.rows.size(); ++s) {
      if (a.rows[s] == 0) continue;
      ++hit;
      for (int64_t i = 0; i < a.cols; ++i)
        e.values[s * size_t(a.cols) + size_t(i)] =
            float(a.sum2[s * size_t(a.cols) + size_t(i)] / double(a.rows[s]) * r.chunks);
    }
    if (routed) {
      ++r.expert_entries;
      if (name.find("ffn_gate_exps") != std::string::npos) {
        const int layer = std::stoi(name.substr(4));
        r.coverage.push_back({layer, hit, n_expert});
      }
    } else {
      ++r.dense_entries;
    }
    r.imatrix.entries.push_back(std::move(e));
  }
  std::sort(r.coverage.begin(), r.coverage.end(), [](const auto& a, const auto& b) { return a.layer < b.layer; });
  return r;
}

}  // namespace ds4::imatrix
