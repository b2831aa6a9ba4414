#pragma once
// Throughput probes for `ds4ctl bench` and benchmarks/kernels_bench: how fast this machine streams
// memory, and how many weight bytes per second each format's matmul consumes, so the two can be
// compared side by side in one run (decode is bound by whichever is lower).
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

}  // namespace ds4::kernels
