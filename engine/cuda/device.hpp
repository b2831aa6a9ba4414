#pragma once
// The CUDA device as the engine sees it: a probe that says whether a usable GPU exists (and if
// not, exactly what is missing), and a Device that holds the primary context and the kernels
// embedded in this binary (compiled by nvcc for sm_90 and sm_121a, plus PTX for newer GPUs).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace ds4::cuda {

struct DeviceInfo {
  bool usable = false;
  std::string why_not;  // when !usable: what is missing (driver, device, kernel image)
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_memory = 0, l2_bytes = 0;
  int driver_version = 0;
  bool integrated = false;           // the GPU shares the host's memory (GB10): weights stay in place
  bool host_pointer_mapped = false;  // registered host memory has the same address on the device
  bool read_only_register = false;   // host registration may be read-only (a read-only file mapping)
};

// A driver error the CUDA context does not survive (an illegal address, a failed launch, an
// uncorrectable ECC error, ...): every later call in this process fails too, so the only way on is
// a new process (docs/cuda.md §device-lost). what() names the call and the driver's error.
class DeviceLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when this binary was built with the CUDA kernels (-DDS4D_CUDA=ON).
bool compiled_in();

// Device 0: loads the driver on first use; never throws.
DeviceInfo probe();

// A range of device memory that something else owns (a DeviceBuffer, a registered host mapping):
// what the launchers take, so weights read in place and buffers allocated here look the same.
struct DeviceSpan {
  uint64_t address = 0;
  size_t size = 0;
  uint64_t ptr() const { return address; }
  size_t bytes() const { return size; }
  // The n bytes at `offset`; throws std::out_of_range past the end.
  DeviceSpan sub(size_t offset, size_t n) const;
  // Copies; throw std::out_of_range past the end, std::runtime_error from the driver. upload is
  // ordered with the kernels launched before and after it and returns without waiting for them:
  // src may be reused at once, as it is pageable memory (the driver stages it); page-locked memory
  // (a registered mapping) must stay unchanged until the next download. download waits for every
  // kernel launched before it.
  void upload(const void* src, size_t bytes, size_t offset = 0) const;
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  // Copies src (all of it) to the start of this span, ordered with the kernels launched before;
  // throws std::out_of_range when src is larger.
  void copy_from(const DeviceSpan& src) const;
  // Sets every byte to 0, ordered with the kernels launched before and after. Throws
  // std::runtime_error from the driver.
  void zero() const;
};

// The int32 error word a kernel sets at the start of `word` (an embedding's out-of-vocabulary
// token, a hash layer's unroutable one): read after waiting for the device, and cleared when set,
// for the next pass. Returns whether it was set; throws std::runtime_error from the driver.
bool take_error_word(DeviceSpan word);

// A GPU buffer; freed on destruction. Converts to the DeviceSpan of all of it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  uint64_t ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  operator DeviceSpan() const { return {ptr_, bytes_}; }
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

// The opened device: primary context current on the calling thread, embedded module loaded.
// Throws std::runtime_error naming what is missing when no usable device exists. Any thread may
// launch (open() makes the context current on it); launches go to the default stream, except on a
// thread that is capturing a PassGraph (pass_graph.hpp), whose launches become the graph's nodes.
class Device {
 public:
  static Device& open();
  const DeviceInfo& info() const { return info_; }
  // Launches kernel `name` with a 1D grid; args as for cuLaunchKernel. Throws on a launch error.
  void launch(const char* name, unsigned grid, unsigned block, unsigned shared_bytes, void** args);
  // Kernels run so far, by every thread, launched one by one or as the nodes of a graph: what a
  // pass costs in kernels (tests, benches).
  uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }
  // Graphs launched so far (pass_graph.hpp), each counted once here and by its kernels above.
  uint64_t graph_launches() const { return graph_launches_.load(std::memory_order_relaxed); }
  void count_graph_launch(uint64_t kernels) {
    launches_.fetch_add(kernels, std::memory_order_relaxed);
    graph_launches_.fetch_add(1, std::memory_order_relaxed);
  }
  // Times the host waited for the device so far (downloads, synchronize), by every thread: each
  // empties the launch queue, so a pass should wait only for its results.
  uint64_t host_waits() const;
  void synchronize();
  // Bytes the device has free now (cuMemGetInfo), for the placement (placement.hpp).
  size_t free_memory();
  // Milliseconds `fn` takes on the device, measured with events around it (fn launches kernels).
  template <class F>
  float time_ms(F&& fn) {
    const uint64_t start = record();
    fn();
    return elapsed_since(start);
  }
  ~Device();

 private:
  Device();
  uint64_t record();
  float elapsed_since(uint64_t start_event);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DeviceInfo info_;
  std::atomic<uint64_t> launches_{0};
  std::atomic<uint64_t> graph_launches_{0};
};

}  // namespace ds4::cuda
