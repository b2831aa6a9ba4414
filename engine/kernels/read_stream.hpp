#pragma once
// Internal: XOR-fold the 64-bit words of a buffer as fast as the core can load them (the read
// side of measure_read_bandwidth_gbs), with isa's architecture's loads (generic ones if it has
// none or the CPU cannot run it).
#include <cstddef>
#include <cstdint>

#include "engine/quant/quant.hpp"

namespace ds4::kernels {
uint64_t read_stream(const uint8_t* p, size_t bytes, quant::Isa isa);
}  // namespace ds4::kernels
