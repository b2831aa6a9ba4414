// See emulated_driver.hpp. A fake device 0 ("CUDA-thread emulator", compute capability 9.0,
// integrated like GB10: registered host memory keeps its address; or discrete, as an H100, where
// emulate_discrete_device says so) whose memory (4 GiB unless told) is aligned host memory and
// whose kernels run synchronously in the emulator, so events time nothing (0 ms) and
// synchronisation has nothing to wait for. A launch with a 2-D/3-D grid or block, or of a kernel
// the table lacks, fails with the driver's own error codes, as a real
// device would refuse it; out-of-range copies are DeviceBuffer's to catch, as with the driver.
// Graphs: a capture records each call as a node that does the call's work when the graph is
// launched (a kernel with a copy of its arguments, a copy reading its source then); the emulator
// is stricter than the driver where the driver would let a mistake pass silently: a call to the
// default stream by a thread that is capturing, which would run outside the graph.
#include "tests/engine/cuda/emulated_driver.hpp"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cuda/driver_api.hpp"
#include "tests/engine/cuda/cuda_emulator.hpp"
#include "tests/engine/cuda/emulated_kernels.hpp"

namespace ds4::cuda::emu {
namespace {
using namespace ds4::cuda::detail;

constexpr CUresult kInvalidValue = 1, kOutOfMemory = 2, kNotFound = 500, kLaunchFailed = 719;
constexpr CUresult kAlreadyRegistered = 712, kNotRegistered = 713;
constexpr CUresult kCaptureUnsupported = 900, kCaptureInvalidated = 901, kCaptureImplicit = 906, kUpdateFailure = 910;
size_t memory_total = size_t(4) << 30;  // what the fake device reports as its total
bool discrete = false;                  // emulate_discrete_device: it does not share the host's memory
bool probed = false;                    // the device's kind was asked for

int sticky_error = 0;  // fail_from_now_on's code; 0: the device works

struct Context {};
Context context;
struct Event {};
Event event;
std::map<const char*, size_t> registered;  // host ranges: base -> bytes
size_t allocated = 0;
std::map<CUdeviceptr, size_t> allocations;
size_t allocations_ok = 0;                  // allocations made
std::optional<size_t> failing_alloc;        // fail_allocation_after: the count at which one fails
std::map<const char*, size_t> page_locked;  // cuMemAllocHost's blocks: base -> bytes

// Graphs: a node is what the captured call would have done, run when the graph is launched.
struct Node {
  int kind = 0;  // 1 copy to the device, 2 copy on it, 3 memset, 4 kernel
  const void* function = nullptr;
  std::function<void()> run;
};
struct Graph {  // a graph and its executables share the nodes, which no call changes
  std::shared_ptr<const std::vector<Node>> nodes;
};
struct Stream {
  bool capturing = false, invalidated = false;
  std::vector<Node> nodes;
};
// The stream this thread captures on: a call of this thread to the default stream meanwhile
// would run at once, outside the graph, where a real driver lets it pass silently.
thread_local Stream* capture_of_thread = nullptr;
size_t graphs_alive = 0;
int graph_error = 0;  // fail_graphs' code

// Where a call on stream `s` goes: *capture set when it is to be recorded there, null when it runs
// now; or the error that refuses it.
CUresult route(CUstream s, Stream** capture) {
  *capture = nullptr;
  if (sticky_error != 0) return sticky_error;
  Stream* st = reinterpret_cast<Stream*>(s);
  if (st == nullptr) return capture_of_thread != nullptr ? kCaptureImplicit : 0;
  if (st->capturing) *capture = st;
  return 0;
}
// A call that waits for the device, made by a thread that captures.
CUresult waits() { return sticky_error != 0 ? sticky_error : capture_of_thread != nullptr ? kCaptureImplicit : 0; }
bool is_page_locked(const void* p, size_t n) {
  const char* q = static_cast<const char*>(p);
  for (const auto& [base, bytes] : registered)
    if (q >= base && q + n <= base + bytes) return true;
  for (const auto& [base, bytes] : page_locked)
    if (q >= base && q + n <= base + bytes) return true;
  return false;
}

CUresult init(unsigned) { return 0; }
CUresult driver_version(int* v) { return *v = 13000, 0; }
CUresult device_count(int* n) { return *n = 1, 0; }
CUresult device_get(CUdevice* d, int ordinal) { return ordinal == 0 ? (*d = 0, 0) : kInvalidValue; }
CUresult device_name(char* name, int len, CUdevice) {
  std::strncpy(name, "CUDA-thread emulator", size_t(len) - 1);
  return 0;
}
CUresult device_attribute(int* v, int attr, CUdevice) {
  switch (attr) {
    case kAttrComputeCapabilityMajor: return *v = 9, 0;
    case kAttrComputeCapabilityMinor: return *v = 0, 0;
    case kAttrMultiprocessorCount: return *v = 4, 0;
    case kAttrL2CacheSize: return *v = 1 << 20, 0;
    case kAttrIntegrated:  // its memory is the host's, as on GB10, unless emulated as discrete
      probed = true;
      return *v = discrete ? 0 : 1, 0;
    case kAttrHostPointerForRegisteredMem:
    case kAttrReadOnlyHostRegisterSupported: return *v = 1, 0;
    default: return kInvalidValue;
  }
}
CUresult total_memory(size_t* bytes, CUdevice) { return *bytes = memory_total, 0; }
CUresult ctx_retain(CUcontext* c, CUdevice) { return *c = reinterpret_cast<CUcontext>(&context), 0; }
CUresult ctx_release(CUdevice) { return 0; }
CUresult ctx_set(CUcontext) { return 0; }
CUresult ctx_sync() { return capture_of_thread != nullptr ? kCaptureImplicit : 0; }
CUresult module_load(CUmodule* m, const void*) { return *m = reinterpret_cast<CUmodule>(&context), 0; }
CUresult module_unload(CUmodule) { return 0; }
CUresult module_function(CUfunction* f, CUmodule, const char* name) {
  const EmulatedKernel* k = find_kernel(name);
  if (k == nullptr) return kNotFound;
  *f = reinterpret_cast<CUfunction>(const_cast<EmulatedKernel*>(k));
  return 0;
}
CUresult mem_alloc(CUdeviceptr* p, size_t bytes) {
  if (sticky_error != 0) return sticky_error;
  if (failing_alloc && *failing_alloc == allocations_ok) {
    failing_alloc.reset();
    return kOutOfMemory;
  }
  const size_t rounded = (bytes + 255) / 256 * 256;
  void* m = allocated + rounded <= memory_total ? std::aligned_alloc(256, rounded) : nullptr;
  if (m == nullptr) return kOutOfMemory;
  *p = reinterpret_cast<CUdeviceptr>(m);
  allocations[*p] = rounded;
  allocated += rounded;
  allocations_ok++;
  return 0;
}
CUresult mem_free(CUdeviceptr p) {
  const auto it = allocations.find(p);
  if (it == allocations.end()) return kInvalidValue;
  allocated -= it->second;
  allocations.erase(it);
  std::free(reinterpret_cast<void*>(p));
  return 0;
}
CUresult host_register(void* p, size_t bytes, unsigned flags) {
  const char* b = static_cast<const char*>(p);
  if (bytes == 0 || (flags & ~(kHostRegisterDeviceMap | kHostRegisterReadOnly | 1u)) != 0) return kInvalidValue;
  for (const auto& [base, n] : registered)
    if (b < base + n && base < b + bytes) return kAlreadyRegistered;
  registered[b] = bytes;
  return 0;
}
CUresult host_unregister(void* p) { return registered.erase(static_cast<const char*>(p)) == 1 ? 0 : kNotRegistered; }
CUresult host_device_pointer(CUdeviceptr* d, void* p, unsigned flags) {
  const char* q = static_cast<const char*>(p);
  for (const auto& [base, n] : registered)
    if (flags == 0 && q >= base && q < base + n) return *d = reinterpret_cast<CUdeviceptr>(p), 0;
  return kInvalidValue;
}
// Kernels run when launched, so an asynchronous copy done now is in stream order. Captured, the
// copy reads its source when the graph runs, as a graph's copy node does; the source must be
// page-locked, since the driver cannot stage pageable memory inside a capture.
CUresult copy_to_device(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  Stream* capture = nullptr;
  if (const CUresult r = route(s, &capture); r != 0) return r;
  if (capture == nullptr) return std::memcpy(reinterpret_cast<void*>(dst), src, n), 0;
  if (!is_page_locked(src, n)) return capture->invalidated = true, kCaptureUnsupported;
  capture->nodes.push_back({1, nullptr, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, n); }});
  return 0;
}
CUresult copy_to_host(void* dst, CUdeviceptr src, size_t n) {
  if (const CUresult r = waits(); r != 0) return r;
  return std::memcpy(dst, reinterpret_cast<const void*>(src), n), 0;
}
CUresult copy_on_device_async(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  Stream* capture = nullptr;
  if (const CUresult r = route(s, &capture); r != 0) return r;
  const auto run = [=] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n); };
  if (capture == nullptr) return run(), 0;
  capture->nodes.push_back({2, nullptr, run});
  return 0;
}
CUresult copy_on_device(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return copy_on_device_async(dst, src, n, nullptr);
}
CUresult mem_info(size_t* free_bytes, size_t* total) {
  *free_bytes = allocated < memory_total ? memory_total - allocated : 0;
  *total = memory_total;
  return 0;
}
CUresult mem_set_async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  Stream* capture = nullptr;
  if (const CUresult r = route(s, &capture); r != 0) return r;
  const auto run = [=] { std::memset(reinterpret_cast<void*>(dst), v, n); };
  if (capture == nullptr) return run(), 0;
  capture->nodes.push_back({3, nullptr, run});
  return 0;
}
CUresult mem_set(CUdeviceptr dst, unsigned char v, size_t n) { return mem_set_async(dst, v, n, nullptr); }
CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, CUstream s, void** params, void** extra) {
  // The kernels use 1-D grids and blocks (blockIdx.x, threadIdx.x) and take their arguments in
  // `params`; the emulator provides nothing else.
  Stream* capture = nullptr;
  if (const CUresult r = route(s, &capture); r != 0) return r;
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || extra != nullptr || bx == 0 || bx > 1024) return kInvalidValue;
  if (gx == 0) return kInvalidValue;
  const EmulatedKernel* k = reinterpret_cast<const EmulatedKernel*>(f);
  if (capture == nullptr) {
    launch(gx, bx, shared, [&] { k->call(params); });
    return 0;
  }
  capture->nodes.push_back({4, k, [gx, bx, shared, kernel = k->bind(params)] { launch(gx, bx, shared, kernel); }});
  return 0;
}

CUresult stream_create(CUstream* s, unsigned) { return *s = reinterpret_cast<CUstream>(new Stream), 0; }
CUresult stream_destroy(CUstream s) {
  Stream* st = reinterpret_cast<Stream*>(s);
  if (st == nullptr || st->capturing) return kInvalidValue;
  delete st;
  return 0;
}
CUresult begin_capture(CUstream s, int mode) {
  Stream* st = reinterpret_cast<Stream*>(s);
  if (st == nullptr || st->capturing || mode < 0 || mode > 2) return kInvalidValue;
  if (capture_of_thread != nullptr) return kCaptureUnsupported;  // one capture per thread here
  st->capturing = true;
  st->invalidated = false;
  st->nodes.clear();
  capture_of_thread = st;
  return 0;
}
CUresult end_capture(CUstream s, CUgraph* g) {
  Stream* st = reinterpret_cast<Stream*>(s);
  if (st == nullptr || !st->capturing) return kInvalidValue;
  st->capturing = false;
  capture_of_thread = nullptr;
  *g = nullptr;
  if (st->invalidated) return kCaptureInvalidated;
  graphs_alive++;
  *g = reinterpret_cast<CUgraph>(new Graph{std::make_shared<const std::vector<Node>>(std::move(st->nodes))});
  return 0;
}
CUresult graph_instantiate(CUgraphExec* e, CUgraph g, unsigned long long) {
  if (g == nullptr) return kInvalidValue;
  if (graph_error != 0) return graph_error;
  graphs_alive++;
  return *e = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<Graph*>(g))), 0;
}
// As the driver: the new graph's parameters into the executable when the nodes match one to one
// in kind and (for kernels) function; else refused, the executable unchanged.
CUresult graph_update(CUgraphExec e, CUgraph g, GraphUpdateResult* why) {
  Graph& exec = *reinterpret_cast<Graph*>(e);
  const Graph& from = *reinterpret_cast<Graph*>(g);
  const std::vector<Node>&a = *exec.nodes, &b = *from.nodes;
  bool same = a.size() == b.size();
  for (size_t i = 0; same && i < b.size(); i++) same = a[i].kind == b[i].kind && a[i].function == b[i].function;
  *why = {};
  if (!same) return why->result = 2, kUpdateFailure;  // CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
  exec.nodes = from.nodes;
  return 0;
}
CUresult graph_launch(CUgraphExec e, CUstream s) {
  Stream* capture = nullptr;
  if (const CUresult r = route(s, &capture); r != 0) return r;
  if (capture != nullptr) return kCaptureUnsupported;
  for (const Node& n : *reinterpret_cast<Graph*>(e)->nodes) n.run();
  return 0;
}
CUresult graph_destroy(CUgraph g) { return graphs_alive--, delete reinterpret_cast<Graph*>(g), 0; }
CUresult graph_exec_destroy(CUgraphExec e) { return graphs_alive--, delete reinterpret_cast<Graph*>(e), 0; }
CUresult host_alloc(void** p, size_t bytes) {
  if (bytes == 0) return kInvalidValue;
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  *p = std::aligned_alloc(4096, rounded);
  if (*p == nullptr) return kOutOfMemory;
  page_locked[static_cast<const char*>(*p)] = rounded;
  return 0;
}
CUresult host_free(void* p) {
  if (page_locked.erase(static_cast<const char*>(p)) != 1) return kInvalidValue;
  std::free(p);
  return 0;
}
CUresult event_create(CUevent* e, unsigned) { return *e = reinterpret_cast<CUevent>(&event), 0; }
CUresult event_record(CUevent, CUstream) { return 0; }
CUresult event_sync(CUevent) { return waits(); }
CUresult event_query(CUevent) { return 0; }
CUresult event_elapsed(float* ms, CUevent, CUevent) { return *ms = 0.0f, 0; }
CUresult event_destroy(CUevent) { return 0; }
CUresult error_string(CUresult r, const char** s) {
  switch (r) {
    case kInvalidValue: *s = "CUDA_ERROR_INVALID_VALUE (emulator: only 1-D launches with kernel parameters)"; break;
    case kOutOfMemory: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case kNotFound: *s = "CUDA_ERROR_NOT_FOUND (no such kernel in device_kernels.cu)"; break;
    case kLaunchFailed: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case kAlreadyRegistered: *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
    case kNotRegistered: *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
    case kCaptureUnsupported:
      *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (emulator: pageable source or nested capture)";
      break;
    case kCaptureInvalidated: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    case kCaptureImplicit:
      *s = "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (emulator: a default-stream call while capturing)";
      break;
    case kUpdateFailure: *s = "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"; break;
    default: *s = nullptr; return kInvalidValue;
  }
  return 0;
}

DriverApi make_api() {
  DriverApi a;
  a.cuInit = init;
  a.cuDriverGetVersion = driver_version;
  a.cuDeviceGetCount = device_count;
  a.cuDeviceGet = device_get;
  a.cuDeviceGetName = device_name;
  a.cuDeviceGetAttribute = device_attribute;
  a.cuDeviceTotalMem = total_memory;
  a.cuDevicePrimaryCtxRetain = ctx_retain;
  a.cuDevicePrimaryCtxRelease = ctx_release;
  a.cuCtxSetCurrent = ctx_set;
  a.cuCtxSynchronize = ctx_sync;
  a.cuModuleLoadData = module_load;
  a.cuModuleUnload = module_unload;
  a.cuModuleGetFunction = module_function;
  a.cuMemAlloc = mem_alloc;
  a.cuMemFree = mem_free;
  a.cuMemcpyHtoDAsync = copy_to_device;
  a.cuMemcpyDtoH = copy_to_host;
  a.cuMemcpyDtoD = copy_on_device;
  a.cuMemGetInfo = mem_info;
  a.cuMemsetD8 = mem_set;
  a.cuMemHostRegister = host_register;
  a.cuMemHostUnregister = host_unregister;
  a.cuMemHostGetDevicePointer = host_device_pointer;
  a.cuLaunchKernel = launch_kernel;
  a.cuEventCreate = event_create;
  a.cuEventRecord = event_record;
  a.cuEventSynchronize = event_sync;
  a.cuEventElapsedTime = event_elapsed;
  a.cuEventDestroy = event_destroy;
  a.cuGetErrorString = error_string;
  a.cuEventQuery = event_query;
  a.cuStreamCreate = stream_create;
  a.cuStreamDestroy = stream_destroy;
  a.cuStreamBeginCapture = begin_capture;
  a.cuStreamEndCapture = end_capture;
  a.cuGraphInstantiate = graph_instantiate;
  a.cuGraphExecUpdate = graph_update;
  a.cuGraphLaunch = graph_launch;
  a.cuGraphDestroy = graph_destroy;
  a.cuGraphExecDestroy = graph_exec_destroy;
  a.cuMemAllocHost = host_alloc;
  a.cuMemFreeHost = host_free;
  a.cuMemsetD8Async = mem_set_async;
  a.cuMemcpyDtoDAsync = copy_on_device_async;
  return a;
}

}  // namespace

void fail_from_now_on(int code) { sticky_error = code; }
size_t graphs_held() { return graphs_alive; }
void fail_graphs(int code) { graph_error = code; }
size_t allocations_made() { return allocations_ok; }
size_t allocated_bytes() { return allocated; }
size_t registered_bytes() {
  size_t n = 0;
  for (const auto& [base, bytes] : registered) n += bytes;
  return n;
}
void emulate_discrete_device(size_t total) {
  if (probed && !discrete)
    throw std::logic_error(
        "emu::emulate_discrete_device: the device was already probed as integrated (call it "
        "before anything asks for the device, from a static initializer)");
  discrete = true;
  memory_total = total;
}
void set_free_memory(size_t bytes) { memory_total = allocated + bytes; }
void fail_allocation_after(size_t n) { failing_alloc = allocations_ok + n; }

void install_driver() {
  static const DriverApi api = make_api();
  replace_driver(&api);
}

}  // namespace ds4::cuda::emu
