// The device: driver (driver_api.cpp), primary context of device 0, and the module built from
// the fatbin that CMake embeds (embedded_kernels.hpp). cuModuleLoadData picks the cubin for the
// device's architecture or JIT-compiles the PTX on newer GPUs.
#include "engine/cuda/device.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/cuda/capture.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/embedded_kernels.hpp"

namespace ds4::cuda {
using detail::check;
using detail::CUdevice;
using detail::DriverApi;

namespace {

const DriverApi& api_or_throw() {
  std::string why;
  const DriverApi* api = detail::driver(&why);
  if (api == nullptr) throw std::runtime_error(why);
  return *api;
}

DeviceInfo probe_once() {
  DeviceInfo d;
  if (!compiled_in()) {
    d.why_not = "this binary was built without the CUDA kernels (-DDS4D_CUDA=OFF or no nvcc at build time)";
    return d;
  }
  const DriverApi* api = detail::driver(&d.why_not);
  if (api == nullptr) return d;
  api->cuDriverGetVersion(&d.driver_version);
  int n = 0;
  if (api->cuDeviceGetCount(&n) != 0 || n == 0) {
    d.why_not = "the NVIDIA driver is loaded but reports no CUDA device";
    return d;
  }
  CUdevice dev = 0;
  if (api->cuDeviceGet(&dev, 0) != 0) {
    d.why_not = "cuDeviceGet(0) failed";
    return d;
  }
  char name[256] = {};
  api->cuDeviceGetName(name, sizeof name, dev);
  d.name = name;
  api->cuDeviceGetAttribute(&d.cc_major, detail::kAttrComputeCapabilityMajor, dev);
  api->cuDeviceGetAttribute(&d.cc_minor, detail::kAttrComputeCapabilityMinor, dev);
  api->cuDeviceGetAttribute(&d.sm_count, detail::kAttrMultiprocessorCount, dev);
  int l2 = 0;
  api->cuDeviceGetAttribute(&l2, detail::kAttrL2CacheSize, dev);
  d.l2_bytes = static_cast<size_t>(l2);
  api->cuDeviceTotalMem(&d.total_memory, dev);
  const auto flag = [&](int attr) {
    int v = 0;
    return api->cuDeviceGetAttribute(&v, attr, dev) == 0 && v != 0;
  };
  d.integrated = flag(detail::kAttrIntegrated);
  d.host_pointer_mapped = flag(detail::kAttrHostPointerForRegisteredMem);
  d.read_only_register = flag(detail::kAttrReadOnlyHostRegisterSupported);
  // Cubins exist for sm_90 and sm_121a; PTX (compute_121) JIT-compiles only on >= 12.1.
  const int cc = d.cc_major * 10 + d.cc_minor;
  if (cc < 90) {
    d.why_not = d.name + " has compute capability " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) +
                "; the embedded kernels need 9.0 (Hopper) or 12.1 (GB10) and newer";
    return d;
  }
  d.usable = true;
  return d;
}

// Host waits for the device (downloads, synchronize) by every thread: Device::host_waits.
std::atomic<uint64_t> g_host_waits{0};

thread_local detail::Capture* t_capture = nullptr;

// A wait inside a capture would read memory the captured nodes have not written yet: a bug in
// the pass, named here rather than left to a wrong answer.
void refuse_in_capture(const char* what) {
  if (t_capture != nullptr)
    throw std::logic_error(std::string(what) + " inside a graph capture: a captured pass may not wait for the device");
}

void release(detail::CUdeviceptr p) {
  if (t_capture != nullptr) {
    t_capture->frees.push_back(p);
    return;
  }
  detail::driver(nullptr)->cuMemFree(p);
}

}  // namespace

namespace detail {
Capture* capturing() { return t_capture; }
void set_capturing(Capture* c) { t_capture = c; }
void count_host_wait() { g_host_waits.fetch_add(1, std::memory_order_relaxed); }
}  // namespace detail

bool compiled_in() { return detail::embedded_kernels().size != 0; }

DeviceInfo probe() {
  static const DeviceInfo info = probe_once();
  return info;
}

DeviceSpan DeviceSpan::sub(size_t offset, size_t n) const {
  if (offset > size || n > size - offset)
    throw std::out_of_range("DeviceSpan: " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                            " past the end of " + std::to_string(size));
  return {address + offset, n};
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  const DriverApi& a = api_or_throw();
  Device::open();  // the context must be current
  detail::CUdeviceptr p = 0;
  check(a, a.cuMemAlloc(&p, bytes == 0 ? 1 : bytes), "cuMemAlloc");
  ptr_ = p;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) release(ptr_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != 0) release(ptr_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}
void DeviceSpan::upload(const void* src, size_t bytes, size_t offset) const {
  const DriverApi& a = api_or_throw();
  // Stream-ordered, so a buffer rewritten for every row is still read by the right kernels; the
  // synchronous copy would first wait for all of them (docs/cuda.md §host-round-trips).
  const uint64_t dst = sub(offset, bytes).address;
  if (detail::Capture* c = t_capture; c != nullptr) {
    c->note(1);
    check(a, a.cuMemcpyHtoDAsync(dst, c->stage(src, bytes), bytes, c->stream), "cuMemcpyHtoDAsync (captured)");
    return;
  }
  check(a, a.cuMemcpyHtoDAsync(dst, src, bytes, nullptr), "cuMemcpyHtoDAsync");
}
void DeviceSpan::download(void* dst, size_t bytes, size_t offset) const {
  const DriverApi& a = api_or_throw();
  refuse_in_capture("DeviceSpan::download");
  g_host_waits.fetch_add(1, std::memory_order_relaxed);
  check(a, a.cuMemcpyDtoH(dst, sub(offset, bytes).address, bytes), "cuMemcpyDtoH");
}
bool take_error_word(DeviceSpan word) {
  int32_t set = 0;
  word.download(&set, sizeof set);
  if (set == 0) return false;
  const int32_t zero = 0;
  word.upload(&zero, sizeof zero);
  return true;
}
void DeviceSpan::copy_from(const DeviceSpan& src) const {
  const DriverApi& a = api_or_throw();
  if (src.size == 0) return;
  const uint64_t dst = sub(0, src.size).address;
  if (detail::Capture* c = t_capture; c != nullptr) {
    c->note(2);
    check(a, a.cuMemcpyDtoDAsync(dst, src.address, src.size, c->stream), "cuMemcpyDtoDAsync (captured)");
    return;
  }
  check(a, a.cuMemcpyDtoD(dst, src.address, src.size), "cuMemcpyDtoD");
}
void DeviceSpan::zero() const {
  const DriverApi& a = api_or_throw();
  if (size == 0) return;
  if (detail::Capture* c = t_capture; c != nullptr) {
    c->note(3);
    check(a, a.cuMemsetD8Async(address, 0, size, c->stream), "cuMemsetD8Async (captured)");
    return;
  }
  check(a, a.cuMemsetD8(address, 0, size), "cuMemsetD8");
}
void DeviceBuffer::upload(const void* src, size_t bytes, size_t offset) {
  DeviceSpan(*this).upload(src, bytes, offset);
}
void DeviceBuffer::download(void* dst, size_t bytes, size_t offset) const {
  DeviceSpan(*this).download(dst, bytes, offset);
}

struct Device::Impl {
  const DriverApi* api = nullptr;
  CUdevice dev = 0;
  detail::CUcontext ctx = nullptr;
  detail::CUmodule module = nullptr;
  std::mutex mu;  // guards the two tables: contexts on different threads may launch
  std::map<std::string, detail::CUfunction, std::less<>> functions;
  std::vector<detail::CUevent> events;
};

Device& Device::open() {
  static Device d;
  const DriverApi& a = *d.impl_->api;
  check(a, a.cuCtxSetCurrent(d.impl_->ctx), "cuCtxSetCurrent");
  return d;
}

Device::Device() : impl_(std::make_unique<Impl>()) {
  info_ = probe();
  if (!info_.usable) throw std::runtime_error("no usable CUDA device: " + info_.why_not);
  const DriverApi& a = api_or_throw();
  impl_->api = &a;
  check(a, a.cuDeviceGet(&impl_->dev, 0), "cuDeviceGet");
  check(a, a.cuDevicePrimaryCtxRetain(&impl_->ctx, impl_->dev), "cuDevicePrimaryCtxRetain");
  check(a, a.cuCtxSetCurrent(impl_->ctx), "cuCtxSetCurrent");
  check(a, a.cuModuleLoadData(&impl_->module, detail::embedded_kernels().data),
        "cuModuleLoadData (embedded sm_90/sm_121a cubins, compute_121 PTX)");
}

Device::~Device() {
  const DriverApi& a = *impl_->api;
  for (detail::CUevent e : impl_->events) a.cuEventDestroy(e);
  if (impl_->module != nullptr) a.cuModuleUnload(impl_->module);
  a.cuDevicePrimaryCtxRelease(impl_->dev);
}

void Device::launch(const char* name, unsigned grid, unsigned block, unsigned shared_bytes, void** args) {
  const DriverApi& a = *impl_->api;
  detail::CUfunction f = nullptr;
  {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->functions.find(name);
    if (it == impl_->functions.end()) {
      check(a, a.cuModuleGetFunction(&f, impl_->module, name), name);
      it = impl_->functions.emplace(name, f).first;
    }
    f = it->second;
  }
  if (detail::Capture* c = t_capture; c != nullptr) {
    // Captured, not run: the graph's launch counts (graph_launches), not its nodes.
    c->note(4 ^ reinterpret_cast<uintptr_t>(f));
    c->kernels++;
    check(a, a.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared_bytes, c->stream, args, nullptr), name);
    return;
  }
  check(a, a.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared_bytes, nullptr, args, nullptr), name);
  launches_.fetch_add(1, std::memory_order_relaxed);
}

void Device::synchronize() {
  refuse_in_capture("Device::synchronize");
  g_host_waits.fetch_add(1, std::memory_order_relaxed);
  check(*impl_->api, impl_->api->cuCtxSynchronize(), "cuCtxSynchronize");
}
uint64_t Device::host_waits() const { return g_host_waits.load(std::memory_order_relaxed); }

size_t Device::free_memory() {
  size_t free_bytes = 0, total = 0;
  check(*impl_->api, impl_->api->cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  return free_bytes;
}

uint64_t Device::record() {
  const DriverApi& a = *impl_->api;
  detail::CUevent e = nullptr;
  check(a, a.cuEventCreate(&e, 0), "cuEventCreate");
  uint64_t index = 0;
  {
    std::lock_guard lock(impl_->mu);
    impl_->events.push_back(e);
    index = impl_->events.size() - 1;
  }
  check(a, a.cuEventRecord(e, nullptr), "cuEventRecord");
  return index;
}

float Device::elapsed_since(uint64_t start_event) {
  const DriverApi& a = *impl_->api;
  refuse_in_capture("Device::time_ms");
  const uint64_t end = record();
  detail::CUevent start = nullptr, stop = nullptr;
  {
    std::lock_guard lock(impl_->mu);
    start = impl_->events[start_event];
    stop = impl_->events[end];
  }
  check(a, a.cuEventSynchronize(stop), "cuEventSynchronize");
  float ms = 0;
  check(a, a.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  return ms;
}

}  // namespace ds4::cuda
