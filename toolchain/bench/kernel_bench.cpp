// Bandwidth probes (see kernel_bench.hpp). The weight matrices are built from one properly
// quantized random row repeated, so every format decodes real scales (no NaN or subnormal
// slow paths) without running a slow quantizer over hundreds of megabytes.
#include "toolchain/bench/kernel_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/kernels/matmul.hpp"
#include "engine/kernels/read_stream.hpp"

namespace ds4::kernels {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kStreamBytes = kBenchStreamBytes;
constexpr double kMinSeconds = 0.3;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

double measure_read_bandwidth_gbs(ThreadPool& pool) {
  std::vector<uint8_t> buf(kStreamBytes);
  for (size_t i = 0; i < buf.size(); i += 4096) buf[i] = static_cast<uint8_t>(i >> 12);  // fault pages in
  const quant::Isa isa = quant::best_isa();
  const int64_t chunk = 1 << 20;
  const int64_t n_chunks = static_cast<int64_t>(buf.size()) / chunk;
  std::vector<uint64_t> sink(static_cast<size_t>(n_chunks));
  double best = 0;
  for (int pass = 0; pass < 4; pass++) {
    const auto t0 = Clock::now();
    pool.parallel_for(n_chunks, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; c++) sink[static_cast<size_t>(c)] = read_stream(buf.data() + c * chunk, chunk, isa);
    });
    const double s = seconds_since(t0);
    if (pass > 0) best = std::max(best, static_cast<double>(buf.size()) / s / 1e9);  // pass 0 warms up
  }
  volatile uint64_t keep = 0;
  for (uint64_t v : sink) keep = keep + v;
  return best;
}

BenchMatrix make_bench_matrix(quant::Type type, size_t weight_bytes) {
  const quant::Traits& tr = quant::traits(type);
  if (!tr.has_dot) throw std::invalid_argument("benchmark: type has no dot product");
  const int64_t cols = 4096;
  const size_t rb = static_cast<size_t>(quant::row_bytes(type, cols));
  const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(weight_bytes / rb));
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(cols));
  for (float& v : x) v = nd(rng);
  std::vector<uint8_t> row(rb);
  tr.quantize(x.data(), row.data(), cols);
  BenchMatrix m;
  m.weights.resize(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; r++) std::memcpy(m.weights.data() + static_cast<size_t>(r) * rb, row.data(), rb);
  for (float& v : x) v = nd(rng);
  quantize_activations(tr.vec_dot_type, x.data(), 1, cols, m.act);
  m.view = WeightView{type, m.weights.data(), rows, cols};
  return m;
}

double measure_dot_gbs(quant::Type type, bool in_cache, ThreadPool& pool, quant::Isa isa) {
  const BenchMatrix m = make_bench_matrix(type, in_cache ? kBenchCacheBytes : kBenchStreamBytes);
  std::vector<float> out(static_cast<size_t>(m.view.rows));
  matmul(pool, m.view, m.act.data(), m.act.size(), 1, out.data(), isa);  // warm up
  int reps = 0;
  const auto t0 = Clock::now();
  double s = 0;
  do {
    matmul(pool, m.view, m.act.data(), m.act.size(), 1, out.data(), isa);
    reps++;
    s = seconds_since(t0);
  } while (s < kMinSeconds || reps < 2);
  return static_cast<double>(m.weights.size()) * reps / s / 1e9;
}

}  // namespace ds4::kernels
