#pragma once
// The importance-matrix collector: runs calibration text through our engine and accumulates,
// for every routed expert and dense projection, the energy (sum of squares) of each input
// column, via the model's ActivationObserver hook (engine/model/activation_observer.hpp; the
// forward pass is unchanged). The result is GGML's legacy imatrix file (imatrix_file.hpp) that
// ds4's quantizer reads: one entry per tensor, routed experts packed as n_expert vectors,
// values = mean energy per column x ncall (ncall = chunks evaluated); an expert no token chose
// gets 1.0 (GGML's convention) and is reported in the coverage.
//
// Text is tokenized with the model's tokenizer and cut into chunks of `chunk_tokens`, each
// prefilled in a fresh context (BOS first), as llama.cpp's imatrix does.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/model/activation_observer.hpp"
#include "engine/model/model.hpp"
#include "toolchain/convert/imatrix_file.hpp"

namespace ds4::imatrix {

class Collector : public ActivationObserver {
 public:
  void observe(std::string_view tensor, int expert, const float* row, int64_t cols) override;

  struct Accum {
    int64_t cols = 0;
    std::vector<double> sum2;    // n_slots x cols
    std::vector<uint64_t> rows;  // per slot (expert, or slot 0 for dense)
  };
  const std::map<std::string, Accum, std::less<>>& accums() const { return acc_; }

 private:
  std::map<std::string, Accum, std::less<>> acc_;
};

struct CollectOptions {
  uint32_t chunk_tokens = 512;
  uint32_t max_chunks = 0;  // 0: all the text
  unsigned threads = 0;
  std::string dataset;  // recorded in the file (the text's path)
};

struct LayerCoverage {
  int layer = 0;
  uint32_t experts_hit = 0, experts = 0;
};

struct CollectResult {
  convert::Imatrix imatrix;
  std::vector<LayerCoverage> coverage;  // routed layers (ffn_gate_exps), in layer order
  uint64_t tokens = 0;
  uint32_t chunks = 0;
  size_t dense_entries = 0, expert_entries = 0;
};

// Loads the model with a collector attached and runs `text` through it. Throws on a model load
// error or text too short for one chunk.
CollectResult collect(const std::string& model_path, const std::string& text, const CollectOptions& opt);

}  // namespace ds4::imatrix
