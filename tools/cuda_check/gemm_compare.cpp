// See gemm_compare.hpp.
#include "tools/cuda_check/gemm_compare.hpp"

#include <algorithm>
#include <bit>
#include <sstream>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/gemm.hpp"
#include "engine/cuda/matvec.hpp"

namespace ds4::cuda_check {
namespace {

void tally(CompareResult& res, float got, float want, const char* what, quant::Type type, int64_t rows, int64_t cols,
           int n, int64_t r, int t) {
  res.compared++;
  if (std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want)) return;
  if (res.mismatched++ == 0) {
    std::ostringstream s;
    s << quant::type_info(type).name << " " << rows << "x" << cols << " n " << n << " row " << r << " act " << t
      << ": gemm " << got << " " << what << " " << want;
    res.first_mismatch = s.str();
  }
}

}  // namespace

GemmCompareResult compare_gemm(quant::Type type, int64_t rows, int64_t cols, int n, uint32_t seed) {
  const MatvecInputs in = matvec_inputs(type, rows, cols, false, seed, n);
  const size_t arb = in.act_row_bytes;
  const cuda::DeviceWeight dw = cuda::upload_weight(type, in.w.data(), rows, cols);
  cuda::DeviceBuffer dact(in.act.size());
  dact.upload(in.act.data(), in.act.size());
  const size_t outs = static_cast<size_t>(n) * rows;
  cuda::DeviceBuffer dout(sizeof(float) * outs), dref(sizeof(float) * outs);
  cuda::gemm(dw, dact, arb, n, dout);
  const cuda::DeviceSpan act = dact, ref_span = dref;
  for (int t = 0; t < n; t += cuda::kMaxMatvecWidth) {
    const int width = std::min(cuda::kMaxMatvecWidth, n - t);
    const size_t out_row = sizeof(float) * static_cast<size_t>(rows);
    cuda::matvec(dw, act.sub(t * arb, act.bytes() - t * arb), arb, width, ref_span.sub(t * out_row, width * out_row));
  }
  std::vector<float> got(outs), ref(outs);
  dout.download(got.data(), sizeof(float) * outs);
  dref.download(ref.data(), sizeof(float) * outs);
  GemmCompareResult res;
  for (int t = 0; t < n; t++)
    for (int64_t r = 0; r < rows; r++) {
      const float g = got[static_cast<size_t>(t) * rows + r];
      tally(res.cpu, g, reference_dot(type, in, cols, r, t), "cpu", type, rows, cols, n, r, t);
      tally(res.matvec, g, ref[static_cast<size_t>(t) * rows + r], "matvec", type, rows, cols, n, r, t);
    }
  return res;
}

}  // namespace ds4::cuda_check
