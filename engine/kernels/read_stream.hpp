#pragma once
// Internal: sum the 64-bit words of a buffer as fast as the core can load them (the read side of
// measure_read_bandwidth_gbs). AVX2 version in read_stream_avx2.cpp.
#include <cstddef>
#include <cstdint>

#include "engine/quant/quant.hpp"

namespace ds4::kernels {
uint64_t read_stream(const uint8_t* p, size_t bytes, quant::Isa isa);
uint64_t read_stream_avx2(const uint8_t* p, size_t bytes);
}  // namespace ds4::kernels
