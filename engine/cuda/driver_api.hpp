#pragma once
// Internal: the few CUDA driver API entry points the backend uses, resolved at run time from
// libcuda.so.1 with dlopen. Nothing links against CUDA, so the binary and the package run on
// machines without a driver; there the loader reports what is missing instead (docs/cuda.md §driver).
#include <cstddef>
#include <cstdint>
#include <string>

namespace ds4::cuda::detail {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUgraphNode = CUgraphNode_st*;

// cuGraphExecUpdate_v2's report (CUgraphExecUpdateResultInfo): why an update was refused.
struct GraphUpdateResult {
  int result = 0;  // CUgraphExecUpdateResult: 0 success, else what differs (topology, a node's kind, ...)
  CUgraphNode error_node = nullptr;
  CUgraphNode error_from_node = nullptr;
};

constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrL2CacheSize = 38;
constexpr int kAttrIntegrated = 18;                   // shares the host's memory (GB10)
constexpr int kAttrHostPointerForRegisteredMem = 91;  // registered memory at the host's address
constexpr int kAttrReadOnlyHostRegisterSupported = 113;
constexpr unsigned kHostRegisterDeviceMap = 0x02;  // CU_MEMHOSTREGISTER_DEVICEMAP
constexpr unsigned kHostRegisterReadOnly = 0x08;   // CU_MEMHOSTREGISTER_READ_ONLY
constexpr unsigned kStreamNonBlocking = 0x1;       // CU_STREAM_NON_BLOCKING: no implicit sync with stream 0
constexpr int kCaptureModeRelaxed = 2;             // CU_STREAM_CAPTURE_MODE_RELAXED
constexpr CUresult kErrorNotReady = 600;           // CUDA_ERROR_NOT_READY (cuEventQuery: still running)

struct DriverApi {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*cuMemHostRegister)(void*, size_t, unsigned) = nullptr;
  CUresult (*cuMemHostUnregister)(void*) = nullptr;
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  // Graphs (pass_graph.cpp): a pass captured on its own stream, launched as one graph.
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*cuGraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*cuGraphExecUpdate)(CUgraphExec, CUgraph, GraphUpdateResult*) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuMemAllocHost)(void**, size_t) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
};

// The driver, loaded once per process; null with `why` set when libcuda.so.1 cannot be opened,
// lacks a symbol, or cuInit fails (no device node, no GPU, driver/kernel module mismatch).
const DriverApi* driver(std::string* why);

// Makes driver() return `api` from now on instead of loading libcuda.so.1 (the CUDA-thread
// emulator's host implementation of these entry points, tests/engine/cuda/emulated_driver.cpp, so
// the launchers and everything above them run on machines without a GPU). Call it before the
// first driver(), probe() or Device::open(): those cache what they found. `api` must outlive them.
void replace_driver(const DriverApi* api);

// Throws std::runtime_error("<what>: <driver's error name> (<code>)") when r != 0; DeviceLost
// (device.hpp) for the errors that leave the context unusable.
void check(const DriverApi& api, CUresult r, const char* what);

}  // namespace ds4::cuda::detail
