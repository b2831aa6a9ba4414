// Loads libcuda.so.1 with dlopen and resolves the driver entry points by their versioned names
// (the _v2 symbols are what the CUDA headers map cuMemAlloc etc. to). A process that never asks
// for the GPU never opens the library.
#include "engine/cuda/driver_api.hpp"

#include <dlfcn.h>

#include <stdexcept>

#include "engine/cuda/device.hpp"

namespace ds4::cuda::detail {
namespace {

constexpr CUresult kErrorNoDevice = 100;    // CUDA_ERROR_NO_DEVICE
constexpr CUresult kErrorStubLibrary = 34;  // CUDA_ERROR_STUB_LIBRARY

struct Loaded {
  DriverApi api;
  bool ok = false;
  std::string why;
};

template <class F>
bool resolve(void* lib, const char* name, F& slot, std::string& why) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    why = std::string("libcuda.so.1 lacks ") + name + " (driver too old?)";
    return false;
  }
  slot = reinterpret_cast<F>(p);
  return true;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    l.why = std::string("no NVIDIA driver: cannot load libcuda.so.1 (") + (e != nullptr ? e : "not found") + ")";
    return l;
  }
  DriverApi& a = l.api;
  std::string& w = l.why;
  const bool all =
      resolve(lib, "cuInit", a.cuInit, w) && resolve(lib, "cuDriverGetVersion", a.cuDriverGetVersion, w) &&
      resolve(lib, "cuDeviceGetCount", a.cuDeviceGetCount, w) && resolve(lib, "cuDeviceGet", a.cuDeviceGet, w) &&
      resolve(lib, "cuDeviceGetName", a.cuDeviceGetName, w) &&
      resolve(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, w) &&
      resolve(lib, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem, w) &&
      resolve(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, w) &&
      resolve(lib, "cuDevicePrimaryCtxRelease_v2", a.cuDevicePrimaryCtxRelease, w) &&
      resolve(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, w) &&
      resolve(lib, "cuCtxSynchronize", a.cuCtxSynchronize, w) &&
      resolve(lib, "cuModuleLoadData", a.cuModuleLoadData, w) && resolve(lib, "cuModuleUnload", a.cuModuleUnload, w) &&
      resolve(lib, "cuModuleGetFunction", a.cuModuleGetFunction, w) && resolve(lib, "cuMemAlloc_v2", a.cuMemAlloc, w) &&
      resolve(lib, "cuMemFree_v2", a.cuMemFree, w) && resolve(lib, "cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync, w) &&
      resolve(lib, "cuMemcpyDtoH_v2", a.cuMemcpyDtoH, w) && resolve(lib, "cuMemcpyDtoD_v2", a.cuMemcpyDtoD, w) &&
      resolve(lib, "cuMemGetInfo_v2", a.cuMemGetInfo, w) && resolve(lib, "cuMemsetD8_v2", a.cuMemsetD8, w) &&
      resolve(lib, "cuMemHostRegister_v2", a.cuMemHostRegister, w) &&
      resolve(lib, "cuMemHostUnregister", a.cuMemHostUnregister, w) &&
      resolve(lib, "cuMemHostGetDevicePointer_v2", a.cuMemHostGetDevicePointer, w) &&
      resolve(lib, "cuLaunchKernel", a.cuLaunchKernel, w) && resolve(lib, "cuEventCreate", a.cuEventCreate, w) &&
      resolve(lib, "cuEventRecord", a.cuEventRecord, w) &&
      resolve(lib, "cuEventSynchronize", a.cuEventSynchronize, w) &&
      resolve(lib, "cuEventElapsedTime", a.cuEventElapsedTime, w) &&
      resolve(lib, "cuEventDestroy_v2", a.cuEventDestroy, w) && resolve(lib, "cuEventQuery", a.cuEventQuery, w) &&
      resolve(lib, "cuGetErrorString", a.cuGetErrorString, w) && resolve(lib, "cuStreamCreate", a.cuStreamCreate, w) &&
      resolve(lib, "cuStreamDestroy_v2", a.cuStreamDestroy, w) &&
      resolve(lib, "cuStreamBeginCapture_v2", a.cuStreamBeginCapture, w) &&
      resolve(lib, "cuStreamEndCapture", a.cuStreamEndCapture, w) &&
      resolve(lib, "cuGraphInstantiateWithFlags", a.cuGraphInstantiate, w) &&
      resolve(lib, "cuGraphExecUpdate_v2", a.cuGraphExecUpdate, w) &&
      resolve(lib, "cuGraphLaunch", a.cuGraphLaunch, w) && resolve(lib, "cuGraphDestroy", a.cuGraphDestroy, w) &&
      resolve(lib, "cuGraphExecDestroy", a.cuGraphExecDestroy, w) &&
      resolve(lib, "cuMemAllocHost_v2", a.cuMemAllocHost, w) && resolve(lib, "cuMemFreeHost", a.cuMemFreeHost, w) &&
      resolve(lib, "cuMemsetD8Async", a.cuMemsetD8Async, w) &&
      resolve(lib, "cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync, w);
  if (!all) return l;
  if (const CUresult r = a.cuInit(0); r != 0) {
    const char* s = nullptr;
    a.cuGetErrorString(r, &s);
    // The stub library and a missing GPU answer without an error string; name them.
    const std::string name = s != nullptr             ? s
                             : r == kErrorStubLibrary ? "the CUDA toolkit's stub libcuda, not a driver"
                             : r == kErrorNoDevice    ? "no CUDA-capable device"
                                                      : "unknown error";
    l.why = "libcuda.so.1 loaded but cuInit failed: " + name + " (" + std::to_string(r) + ")";
    return l;
  }
  l.ok = true;
  return l;
}

const DriverApi* replacement = nullptr;

}  // namespace

void replace_driver(const DriverApi* api) { replacement = api; }

const DriverApi* driver(std::string* why) {
  if (replacement != nullptr) return replacement;
  static const Loaded loaded = load();
  if (!loaded.ok && why != nullptr) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

void check(const DriverApi& api, CUresult r, const char* what) {
  if (r == 0) return;
  const char* s = nullptr;
  api.cuGetErrorString(r, &s);
  const std::string message =
      std::string(what) + ": " + (s != nullptr ? s : "unknown CUDA error") + " (" + std::to_string(r) + ")";
  // The sticky errors: the context is corrupt after them (CUDA_ERROR_ECC_UNCORRECTABLE 214,
  // ILLEGAL_ADDRESS 700, LAUNCH_TIMEOUT 702, HARDWARE_STACK_ERROR .. LAUNCH_FAILED 714-719).
  if (r == 214 || r == 700 || r == 702 || (r >= 714 && r <= 719))
    throw DeviceLost(message + "; the CUDA context is lost, the process must restart");
  throw std::runtime_error(message);
}

}  // namespace ds4::cuda::detail
