#pragma once
// Throughput probes for `ds4ctl bench` and benchmarks/kernels_bench: how fast this machine streams
// memory, and how many weight bytes per second each format's matmul consumes, so the two can be
// compared side by side in one run (decode is bound by whichever is lower).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/kernels/matmul.hpp"
#include "engine/kernels/thread_pool.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::kernels {

// Streaming read bandwidth (1e9 bytes/s) over a buffer of 256 MiB (8x the LLC of a typical
// server part), all pool threads reading disjoint parts; best of a few passes.
double measure_read_bandwidth_gbs(ThreadPool& pool);

// Weight bytes per second (1e9) through matmul with one activation row (decode), 4096 columns.
// in_cache: a 512 KiB weight matrix reused (compute bound); otherwise a 256 MiB matrix streamed
// from memory. Throws std::invalid_argument for a type without a dot product.
double measure_dot_gbs(quant::Type type, bool in_cache, ThreadPool& pool, quant::Isa isa);

// Working-set sizes used above.
inline constexpr size_t kBenchStreamBytes = size_t{256} << 20;
inline constexpr size_t kBenchCacheBytes = size_t{512} << 10;

// A decode-shaped problem: a weight matrix of about `weight_bytes` (4096 columns; one properly
// quantized random row repeated) and one quantized random activation row for it.
struct BenchMatrix {
  std::vector<uint8_t> weights, act;
  WeightView view;
};
BenchMatrix make_bench_matrix(quant::Type type, size_t weight_bytes);

}  // namespace ds4::kernels
