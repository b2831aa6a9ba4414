#pragma once
// Internal: where this thread's device calls go while a PassGraph captures a pass (pass_graph.cpp,
// docs/cuda.md §graphs). Device::launch, DeviceSpan's copies and DeviceBuffer's frees ask
// capturing(); null, the usual answer, means the default stream, at once. A capture is the
// calling thread's alone: other threads keep launching on the default stream meanwhile.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/cuda/driver_api.hpp"

namespace ds4::cuda::detail {

struct Capture {
  CUstream stream = nullptr;  // the capturing stream: every node of the pass goes there
  // Copies `bytes` of `src` into page-locked memory that stays unchanged until the graph has run
  // and returns that copy: a graph's copy node reads its source when the graph runs, not when it
  // was captured, and the driver cannot stage pageable memory inside a capture.
  std::function<const void*(const void* src, size_t bytes)> stage;
  // Device memory released during the capture: the captured nodes may still use it, so it is
  // freed once the graph has run.
  std::vector<CUdeviceptr> frees;
  // The nodes' kinds in order (a kernel by its function): two captures with the same signature
  // have the same shape, so one executable graph serves both with new parameters.
  uint64_t signature = 0xcbf29ce484222325ull;
  uint64_t kernels = 0;  // kernel nodes captured
  void note(uint64_t kind) { signature = (signature ^ kind) * 0x100000001b3ull; }
};

// This thread's capture, or null.
Capture* capturing();
void set_capturing(Capture* c);
// Counts a wait for the device in Device::host_waits.
void count_host_wait();

}  // namespace ds4::cuda::detail
