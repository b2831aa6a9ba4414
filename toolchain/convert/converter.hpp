#pragma once
// ds4::convert: the official DeepSeek V4 Flash checkpoint (safetensors: FP8 E4M3 dense weights,
// FP4 E2M1 routed experts, BF16/F32 elsewhere) to the DS4 GGUF this engine loads, by recipe.
//
// make_plan() checks everything before a byte is written; tensors are then produced in row chunks
// by worker threads straight to OUT.partial, journalled so a rerun resumes, and renamed to OUT at
// the end (an interrupted run never leaves a file at OUT). Memory is bounded by threads x one
// chunk. The result carries the audit (audit.hpp). How it runs and resumes:
// docs/toolchain.md §how-a-conversion-runs, §converting-the-official-checkpoint-toolchainconvert.
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "toolchain/convert/convert_plan.hpp"

namespace ds4::convert {

struct Progress {
  uint64_t source_bytes_done = 0, source_bytes_total = 0;
  size_t tensors_done = 0, tensors_total = 0;
  std::string current;  // tensor being produced
};
// Called from worker threads (serialised); may throw to abort the conversion (the partial file
// and journal stay, so the next run resumes).
using ProgressFn = std::function<void(const Progress&)>;

struct ConvertOptions {
  std::string source_dir;
  std::string output;         // OUT.gguf; the MTP sidecar (if any) is OUT minus .gguf + ".mtp.gguf"
  std::string recipe = "q2";  // q2 | q4 | mxfp4 | FILE.toml
  unsigned threads = 1;
  // GGML imatrix file (ds4ctl imatrix). Checked against the model (every entry names a target
  // tensor, sizes match), hashed into the artifact id and recorded in the metadata, and used as
  // the per-input-column importance of the quantizers that have a weighted mode (IQ2_XXS, Q2_K,
  // Q4_K; routed experts per expert: docs/quant.md §importance-weighted-quantization). Tensors
  // without an entry, of another type, or of an expert the calibration never reached are
  // quantized plainly.
  std::string imatrix;
  ProgressFn progress;
};

struct TensorResult {
  std::string name;  // GGUF name
  std::string file;  // "main" or "mtp"
  quant::Type type;
  std::vector<uint64_t> dims;
  int layer = -1;
  size_t n_sources = 0;              // weight tensors read (experts: n_expert)
  std::vector<std::string> sources;  // HF names (experts: first and last)
  SourceKind kind;
  bool lossless = false;                           // the target holds the source values exactly (e.g. FP4 -> MXFP4)
  bool resumed = false;                            // finished by an earlier run, verified by hash
  bool importance = false;                         // quantized with its imatrix entry as importance
  double sum_err2 = 0, sum_ref2 = 0, max_err = 0;  // over the sampled rows
  uint64_t sampled = 0;                            // sampled elements
  double seconds = 0;                              // wall time producing it
  uint64_t elements = 0, out_bytes = 0, source_bytes = 0;
  double rel_rmse() const { return sum_ref2 > 0 ? std::sqrt(sum_err2 / sum_ref2) : 0.0; }
};

struct Invariant {
  std::string name, detail;
  bool ok = false;
};

struct ConvertResult {
  std::string output, sidecar;  // sidecar empty when the checkpoint has no MTP tensors
  std::string source_fingerprint, artifact_id, recipe_name, recipe_canonical;
  std::string imatrix_path, imatrix_hash, imatrix_dataset;  // empty without --imatrix
  size_t imatrix_entries = 0;
  size_t imatrix_targets_covered = 0;  // target tensors whose bytes the imatrix steered
  std::vector<TensorResult> tensors;
  std::vector<SkippedSource> skipped;
  std::vector<Invariant> invariants;
  uint64_t source_bytes = 0, output_bytes = 0;
  double seconds = 0;
  uint64_t peak_rss_bytes = 0;
  unsigned threads = 1;
  size_t resumed_tensors = 0;
};

// Converts; throws ConvertError (file and tensor named) on any problem, before writing when
// the problem is in the inputs, and on any invariant violation after writing (the output is
// then removed).
ConvertResult convert_checkpoint(const ConvertOptions& options);

// Reusable: float rows -> one GGUF type, n_rows rows of `cols` values (cols a multiple of the
// type's block). Returns the encoded bytes. This is what the converter applies to every float
// tensor; other tools (e.g. the tiny agent model's export) call it to quantize by recipe.
// importance: null, or `cols` per-column importance values shared by every row
// (quant::quantize_row).
std::vector<std::byte> quantize_rows(quant::Type type, const float* src, uint64_t n_rows, uint64_t cols,
                                     const float* importance = nullptr);

// The quantizer importance of an imatrix entry's values for one matrix (one expert's slice
// of a routed-expert entry): the mean squared activations, each floored at 1e-3 of their mean
// so a column the calibration text never excited is still fitted, not ignored. Empty when
// the values are all zero (an expert no calibration token reached): quantize plainly.
std::vector<float> importance_from_imatrix(std::span<const float> values);
// Convenience: the type a recipe gives a tensor of the DS4 catalogue (by GGUF name).
quant::Type recipe_type_for(const Recipe& r, const gguf::TensorRule& rule);

// Peak resident set size of this process so far (getrusage ru_maxrss).
uint64_t peak_rss_bytes();

}  // namespace ds4::convert
