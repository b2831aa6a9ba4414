// Load-weighted merge of hash-layer experts with re-encoding; see expert_merge.hpp.
#include "toolchain/convert/surgery/expert_merge.hpp"

#include <cmath>

#include "toolchain/convert/convert_error.hpp"
#include "toolchain/convert/official_formats.hpp"

namespace ds4::convert::surgery {

double MergeAudit::rel_rmse() const { return sum_ref2 > 0 ? std::sqrt(sum_err2 / sum_ref2) : 0.0; }

MergedPart merge_fp4_experts(const std::vector<const SourceTensor*>& weights,
                             const std::vector<const SourceTensor*>& scales, const std::vector<double>& w,
                             MergeAudit& audit) {
  const SourceTensor& first = *weights.at(0);
  for (size_t i = 0; i < weights.size(); ++i) {
    const SourceTensor& t = *weights[i];
    if (t.dtype != Dtype::I8 || t.shape.size() != 2 || !scales[i] || scales[i]->dtype != Dtype::F8_E8M0)
      throw ConvertError("", t.name, "merge needs packed FP4 experts (I8 with an E8M0 .scale)");
    if (t.shape != first.shape) throw ConvertError("", t.name, "merge members differ in shape from " + first.name);
  }
  double wsum = 0;
  for (double x : w) wsum += x;
  if (!(wsum > 0)) throw ConvertError("", first.name, "merge weights of the cluster sum to zero");
  const uint64_t rows = first.shape[0], in = first.shape[1] * 2;
  MergedPart out;
  out.weight.resize(rows * in / 2);
  out.scale.resize(rows * in / 32);
  std::vector<float> row(in), acc(in), back(in);
  for (uint64_t r = 0; r < rows; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t i = 0; i < weights.size(); ++i) {
      decode_fp4_rows(reinterpret_cast<const uint8_t*>(weights[i]->data),
                      reinterpret_cast<const uint8_t*>(scales[i]->data), in, r, 1, row.data());
      const float a = float(w[i] / wsum);
      for (uint64_t j = 0; j < in; ++j) acc[j] += a * row[j];
    }
    auto* q = reinterpret_cast<uint8_t*>(out.weight.data()) + r * in / 2;
    auto* s = reinterpret_cast<uint8_t*>(out.scale.data()) + r * in / 32;
    encode_fp4(acc.data(), 1, in, q, s);
    decode_fp4_rows(q, s, in, 0, 1, back.data());
    for (uint64_t j = 0; j < in; ++j) {
      const double d = double(back[j]) - acc[j];
      audit.sum_err2 += d * d, audit.sum_ref2 += double(acc[j]) * acc[j];
    }
  }
  return out;
}

}  // namespace ds4::convert::surgery
