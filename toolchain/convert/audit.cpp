// Audit files; see audit.hpp.
#include "toolchain/convert/audit.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <fstream>
#include <map>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert {

namespace json = boost::json;

namespace {

std::string base_of(const std::string& out) {
  const std::string ext = ".gguf";
  return out.size() > ext.size() && out.compare(out.size() - ext.size(), ext.size(), ext) == 0
             ? out.substr(0, out.size() - ext.size())
             : out;
}

struct TypeSummary {
  size_t tensors = 0;
  double sum_err2 = 0, sum_ref2 = 0, max_err = 0, worst_rel = 0;
  uint64_t elements = 0;
  double seconds = 0;
};

}  // namespace

std::string write_audit(const ConvertResult& r) {
  const std::string base = base_of(r.output);
  std::map<std::string, TypeSummary> by_type;
  json::array tensors;
  for (const TensorResult& t : r.tensors) {
    json::array dims, sources;
    for (uint64_t d : t.dims) dims.push_back(d);
    for (const std::string& s : t.sources) sources.push_back(json::string(s));
    tensors.push_back(json::object{{"name", t.name},
                                   {"file", t.file},
                                   {"type", std::string(quant::type_info(t.type).name)},
                                   {"dims", dims},
                                   {"layer", t.layer},
                                   {"sources", sources},
                                   {"n_sources", t.n_sources},
                                   {"source_format", std::string(source_kind_name(t.kind))},
                                   {"lossless", t.lossless},
                                   {"resumed", t.resumed},
                                   {"rel_rmse", t.rel_rmse()},
                                   {"max_abs_err", t.max_err},
                                   {"sampled_elements", t.sampled},
                                   {"seconds", t.seconds},
                                   {"elements", t.elements},
                                   {"bytes", t.out_bytes},
                                   {"importance_weighted", t.importance}});
    TypeSummary& s = by_type[std::string(quant::type_info(t.type).name)];
    ++s.tensors;
    s.sum_err2 += t.sum_err2, s.sum_ref2 += t.sum_ref2, s.max_err = std::max(s.max_err, t.max_err);
    s.worst_rel = std::max(s.worst_rel, t.rel_rmse());
    s.elements += t.elements, s.seconds += t.seconds;
  }
  json::array skipped, invariants;
  for (const SkippedSource& s : r.skipped) skipped.push_back(json::object{{"source", s.name}, {"reason", s.reason}});
  bool all_ok = true;
  for (const Invariant& i : r.invariants) {
    invariants.push_back(json::object{{"name", i.name}, {"ok", i.ok}, {"detail", i.detail}});
    all_ok &= i.ok;
  }
  json::object types;
  for (const auto& [n, s] : by_type)
    types[n] = json::object{{"tensors", s.tensors},
                            {"rel_rmse", s.sum_ref2 > 0 ? std::sqrt(s.sum_err2 / s.sum_ref2) : 0.0},
                            {"worst_tensor_rel_rmse", s.worst_rel},
                            {"max_abs_err", s.max_err},
                            {"elements", s.elements},
                            {"seconds", s.seconds}};
  json::object root{{"output", r.output},
                    {"sidecar", r.sidecar},
                    {"source_fingerprint", r.source_fingerprint},
                    {"artifact_id", r.artifact_id},
                    {"recipe", r.recipe_name},
                    {"recipe_table", r.recipe_canonical},
                    {"threads", r.threads},
                    {"seconds", r.seconds},
                    {"peak_rss_bytes", r.peak_rss_bytes},
                    {"source_bytes", r.source_bytes},
                    {"output_bytes", r.output_bytes},
                    {"resumed_tensors", r.resumed_tensors},
                    {"imatrix", json::object{{"file", r.imatrix_path},
                                             {"hash", r.imatrix_hash.empty() ? "none" : r.imatrix_hash},
                                             {"dataset", r.imatrix_dataset},
                                             {"entries", r.imatrix_entries},
                                             {"targets_weighted", r.imatrix_targets_covered}}},
                    {"invariants_ok", all_ok},
                    {"invariants", invariants},
                    {"types", types},
                    {"tensors", tensors},
                    {"skipped_sources", skipped}};
  const std::string jpath = base + ".audit.json", tpath = base + ".audit.txt";
  std::ofstream(jpath) << json::serialize(root) << "\n";

  std::string txt = fmt::format(
      "ds4ctl convert audit\noutput {}  artifact {}  source fingerprint {}\nrecipe {}  threads {}  {:.1f} s  peak RSS "
      "{:.1f} MiB\n\n",
      r.output, r.artifact_id, r.source_fingerprint, r.recipe_name, r.threads, r.seconds, r.peak_rss_bytes / 1048576.0);
  txt += fmt::format("imatrix {} (hash {}, {} entries, {} tensors quantized with importance)\n\n",
                     r.imatrix_path.empty() ? "none" : r.imatrix_path, r.imatrix_hash.empty() ? "none" : r.imatrix_hash,
                     r.imatrix_entries, r.imatrix_targets_covered);
  txt += "invariants\n";
  for (const Invariant& i : r.invariants)
    txt += fmt::format("  [{}] {:<17} {}\n", i.ok ? "ok" : "FAIL", i.name, i.detail);
  txt += "\nper type                 tensors  rel RMSE   worst rel  max |err|\n";
  for (const auto& [n, s] : by_type)
    txt += fmt::format("  {:<22} {:>7}  {:>9.5f}  {:>9.5f}  {:>9.5f}\n", n, s.tensors,
                       s.sum_ref2 > 0 ? std::sqrt(s.sum_err2 / s.sum_ref2) : 0.0, s.worst_rel, s.max_err);
  txt += fmt::format("\n{:<36} {:<8} {:<20} {:<22} {:>9} {:>9}\n", "tensor", "type", "dims", "source", "rel RMSE",
                     "max|err|");
  for (const TensorResult& t : r.tensors) {
    std::string dims;
    for (size_t i = 0; i < t.dims.size(); ++i) dims += (i ? "x" : "") + std::to_string(t.dims[i]);
    std::string src = t.sources.front() + (t.n_sources > 1 ? fmt::format(" (+{})", t.n_sources - 1) : "");
    txt += fmt::format("{:<36} {:<8} {:<20} {:<22} {:>9.5f} {:>9.5f}{}\n", t.name, quant::type_info(t.type).name, dims,
                       src, t.rel_rmse(), t.max_err, t.lossless ? "  lossless" : (t.importance ? "  imatrix" : ""));
  }
  if (!r.skipped.empty()) {
    txt += "\nsource tensors without a target in the main file\n";
    for (const SkippedSource& s : r.skipped) txt += "  " + s.name + ": " + s.reason + "\n";
  }
  std::ofstream(tpath) << txt;
  return jpath;
}

}  // namespace ds4::convert
