#pragma once
// The CUDA driver API as the CUDA-thread emulator provides it: installs host implementations of
// the entry points engine/cuda/driver_api.hpp lists, so Device, DeviceBuffer and every launcher in
// engine/cuda run unchanged on a machine without a GPU. Memory is host memory (a device pointer is
// the host address), kernels are the real .cuh sources compiled by the host compiler and found by
// name (emulated_kernels.cpp), launches run in cuda_emulator.cpp's fibers, synchronously.
// docs/cuda.md §emulated-driver says what this checks and what it cannot.

#include <cstddef>

namespace ds4::cuda::emu {

// Call before anything asks for the device (probe, Device::open, DeviceBuffer); idempotent.
void install_driver();

// From now on every launch, copy and allocation fails with driver error `code` (700: an illegal
// address, as a faulting kernel leaves a real context), until called with 0: what the engine
// does when its device is lost (docs/cuda.md §device-lost).
void fail_from_now_on(int code);

// Graphs and executable graphs the engine holds now (made and not destroyed): what a PassGraph
// keeps, and what a leak would grow.
std::size_t graphs_held();

// From now on instantiating a graph fails with driver error `code` (900: a capture the driver does
// not support), until called with 0; everything else works: a graph fault the context survives.
void fail_graphs(int code);

// Allocations made so far (cuMemAlloc calls that succeeded), the bytes they hold now, and the
// host bytes registered now (cuMemHostRegister).
std::size_t allocations_made();
std::size_t allocated_bytes();
std::size_t registered_bytes();

// The device reports itself discrete (not integrated: an H100 rather than a GB10) with `total`
// bytes of memory. Call before anything asks for the device (Device caches what it probed): from
// a static initializer of a binary of its own; throws std::logic_error once it was probed as
// integrated. The memory is still host memory; only the figures and the kind change.
void emulate_discrete_device(std::size_t total);
// From now on the device has `bytes` free beyond what is allocated now: as if another process
// took or gave back the rest (cuMemGetInfo, and cuMemAlloc's limit).
void set_free_memory(std::size_t bytes);
// The allocation after the next n fails once with CUDA_ERROR_OUT_OF_MEMORY, an error the context
// survives (what a pass meets when the device's memory runs out); the ones after it work again.
void fail_allocation_after(std::size_t n);

}  // namespace ds4::cuda::emu
