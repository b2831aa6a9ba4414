// mlock / cudaHostRegister of the weight mapping; see weight_pin.hpp.
#include "daemon/weight_pin.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/planner/byte_size.hpp"

namespace ds4::daemon {
namespace {

// From cuda_runtime_api.h (values are part of the stable CUDA ABI).
constexpr unsigned kCudaHostRegisterMapped = 0x02;
constexpr unsigned kCudaHostRegisterReadOnly = 0x08;
using CudaHostRegisterFn = int (*)(void*, size_t, unsigned);
using CudaHostUnregisterFn = int (*)(void*);
using CudaGetErrorStringFn = const char* (*)(int);

std::string limit_text(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : planner::format_gib(v); }

void* open_cudart() {
  for (const char* name : {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

}  // namespace

WeightPin WeightPin::pin(config::PinMode mode, const void* base, size_t bytes) {
  WeightPin p;
  p.mode_ = mode;
  p.base_ = base;
  p.bytes_ = bytes;
  if (mode == config::PinMode::None || bytes == 0) return p;
  if (mode == config::PinMode::Lock) {
    if (mlock(base, bytes) != 0) {
      const int err = errno;
      rlimit rl{};
      getrlimit(RLIMIT_MEMLOCK, &rl);
      p.mode_ = config::PinMode::None;
      throw PinError("--pin lock: mlock of " + planner::format_gib(bytes) + " of weights failed (" +
                     std::strerror(err) + "): RLIMIT_MEMLOCK is " + limit_text(rl.rlim_cur) + " (soft) / " +
                     limit_text(rl.rlim_max) +
                     " (hard). Set LimitMEMLOCK=infinity in the systemd unit (ds4d-supervisor raises it for "
                     "the daemon when it runs as root), or use --pin none or --pin cuda");
    }
    return p;
  }
  void* h = open_cudart();
  if (h == nullptr) {
    p.mode_ = config::PinMode::None;
    throw PinError(std::string("--pin cuda: cannot load libcudart.so (") + dlerror() +
                   "); install the CUDA runtime or use --pin lock");
  }
  auto reg = reinterpret_cast<CudaHostRegisterFn>(dlsym(h, "cudaHostRegister"));
  auto err_str = reinterpret_cast<CudaGetErrorStringFn>(dlsym(h, "cudaGetErrorString"));
  if (reg == nullptr) {
    dlclose(h);
    p.mode_ = config::PinMode::None;
    throw PinError("--pin cuda: libcudart.so has no cudaHostRegister");
  }
  const int rc = reg(const_cast<void*>(base), bytes, kCudaHostRegisterMapped | kCudaHostRegisterReadOnly);
  if (rc != 0) {
    const std::string why = err_str ? err_str(rc) : ("error " + std::to_string(rc));
    dlclose(h);
    p.mode_ = config::PinMode::None;
    throw PinError("--pin cuda: cudaHostRegister of " + planner::format_gib(bytes) + " failed: " + why +
                   " (the device must support host registration; try --pin lock)");
  }
  p.cudart_ = h;
  return p;
}

void WeightPin::release() noexcept {
  if (mode_ == config::PinMode::Lock && base_ != nullptr) munlock(base_, bytes_);
  if (mode_ == config::PinMode::Cuda && cudart_ != nullptr) {
    if (auto unreg = reinterpret_cast<CudaHostUnregisterFn>(dlsym(cudart_, "cudaHostUnregister")))
      unreg(const_cast<void*>(base_));
    dlclose(cudart_);
  }
  mode_ = config::PinMode::None;
  base_ = nullptr;
  bytes_ = 0;
  cudart_ = nullptr;
}

WeightPin::~WeightPin() { release(); }

WeightPin::WeightPin(WeightPin&& o) noexcept
    : mode_(std::exchange(o.mode_, config::PinMode::None)),
      base_(std::exchange(o.base_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      cudart_(std::exchange(o.cudart_, nullptr)) {}

WeightPin& WeightPin::operator=(WeightPin&& o) noexcept {
  if (this != &o) {
    release();
    mode_ = std::exchange(o.mode_, config::PinMode::None);
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    cudart_ = std::exchange(o.cudart_, nullptr);
  }
  return *this;
}

}  // namespace ds4::daemon
