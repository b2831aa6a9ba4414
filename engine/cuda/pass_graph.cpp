// See pass_graph.hpp. The capture stream is non-blocking, so the legacy default stream that other
// threads launch on never synchronizes with it (which would end the capture); the graph itself is
// launched on the default stream, after everything queued before it. Uploads are staged in
// page-locked chunks that are reused from the next run on, once the graph before has run.
#include "engine/cuda/pass_graph.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/capture.hpp"
#include "engine/cuda/device.hpp"
#include "engine/cuda/driver_api.hpp"

namespace ds4::cuda {
using detail::check;
using detail::CUresult;
using detail::DriverApi;

namespace {

constexpr CUresult kUpdateRefused = 910;  // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: another shape
constexpr size_t kChunkBytes = size_t(1) << 20;
constexpr size_t kStageAlign = 256;

std::atomic<int> g_enabled{-1};  // -1: not decided yet
std::atomic<uint64_t> g_instantiations{0}, g_updates{0};

bool enabled_by_environment() {
  const char* v = std::getenv("DS4D_CUDA_GRAPHS");
  return v == nullptr || (std::strcmp(v, "off") != 0 && std::strcmp(v, "0") != 0);
}

}  // namespace

struct PassGraph::Impl {
  const DriverApi* api = nullptr;
  detail::CUstream stream = nullptr;
  detail::CUevent done = nullptr;  // recorded after each launch: the staging is free once it fired
  bool launched = false;
  struct Chunk {
    void* host = nullptr;
    size_t bytes = 0;
  };
  std::vector<Chunk> chunks;
  size_t chunk = 0, used = 0;  // the staging cursor of the run being captured
  struct Shape {
    uint64_t signature = 0;
    detail::CUgraphExec exec = nullptr;
    uint64_t last_run = 0;
  };
  std::vector<Shape> shapes;
  std::vector<detail::CUdeviceptr> frees;  // released in the last capture: freed once it has run
  uint64_t runs = 0, instantiations = 0, updates = 0;

  // Page-locked room for `bytes`, in the current chunk or a later (possibly new) one.
  void* stage(const void* src, size_t bytes) {
    for (;; chunk++, used = 0) {
      if (chunk == chunks.size()) {
        Chunk c;
        c.bytes = std::max(kChunkBytes, bytes);
        check(*api, api->cuMemAllocHost(&c.host, c.bytes), "cuMemAllocHost (graph upload staging)");
        chunks.push_back(c);
      }
      const size_t at = (used + kStageAlign - 1) / kStageAlign * kStageAlign;
      if (at + bytes <= chunks[chunk].bytes) {
        void* dst = static_cast<char*>(chunks[chunk].host) + at;
        if (bytes > 0) std::memcpy(dst, src, bytes);
        used = at + bytes;
        return dst;
      }
    }
  }

  // The staging may be reused, and what the last capture released freed, only once the previous
  // graph has run; it usually has (the pass read its results).
  void wait_previous() {
    if (launched) {
      const CUresult r = api->cuEventQuery(done);
      if (r == detail::kErrorNotReady) {
        detail::count_host_wait();
        check(*api, api->cuEventSynchronize(done), "cuEventSynchronize (previous graph)");
      } else {
        check(*api, r, "cuEventQuery (previous graph)");
      }
      launched = false;
    }
    free_now();
  }

  detail::CUgraphExec instantiate(detail::CUgraph g, uint64_t signature) {
    if (shapes.size() == kMaxShapes) {
      const auto oldest = std::min_element(shapes.begin(), shapes.end(),
                                           [](const Shape& x, const Shape& y) { return x.last_run < y.last_run; });
      api->cuGraphExecDestroy(oldest->exec);
      shapes.erase(oldest);
    }
    detail::CUgraphExec exec = nullptr;
    check(*api, api->cuGraphInstantiate(&exec, g, 0), "cuGraphInstantiate");
    shapes.push_back({signature, exec, runs});
    instantiations++;
    g_instantiations.fetch_add(1, std::memory_order_relaxed);
    return exec;
  }

  // The executable for graph g of `signature`: the kept one updated, else a new one.
  detail::CUgraphExec executable(detail::CUgraph g, uint64_t signature) {
    const auto kept =
        std::find_if(shapes.begin(), shapes.end(), [&](const Shape& s) { return s.signature == signature; });
    if (kept == shapes.end()) return instantiate(g, signature);
    detail::GraphUpdateResult why;
    const CUresult r = api->cuGraphExecUpdate(kept->exec, g, &why);
    if (r == 0) {
      kept->last_run = runs;
      updates++;
      g_updates.fetch_add(1, std::memory_order_relaxed);
      return kept->exec;
    }
    // Refused (the shapes' hashes met, or the driver finds a difference the signature does not
    // see): a new executable for this capture.
    if (r != kUpdateRefused) check(*api, r, "cuGraphExecUpdate");
    api->cuGraphExecDestroy(kept->exec);
    shapes.erase(kept);
    return instantiate(g, signature);
  }

  void free_now() {
    for (detail::CUdeviceptr p : frees) api->cuMemFree(p);
    frees.clear();
  }
};

PassGraph::PassGraph() : impl_(std::make_unique<Impl>()) {}

PassGraph::~PassGraph() {
  Impl& m = *impl_;
  if (m.api == nullptr) return;
  if (m.launched) m.api->cuEventSynchronize(m.done);
  m.free_now();
  for (const Impl::Shape& s : m.shapes) m.api->cuGraphExecDestroy(s.exec);
  for (const Impl::Chunk& c : m.chunks) m.api->cuMemFreeHost(c.host);
  if (m.done != nullptr) m.api->cuEventDestroy(m.done);
  if (m.stream != nullptr) m.api->cuStreamDestroy(m.stream);
}

void PassGraph::run(const std::function<void()>& enqueue) {
  Device& dev = Device::open();  // the context current on this thread
  Impl& m = *impl_;
  if (m.api == nullptr) {
    const DriverApi* a = detail::driver(nullptr);
    check(*a, a->cuStreamCreate(&m.stream, detail::kStreamNonBlocking), "cuStreamCreate (graph capture)");
    check(*a, a->cuEventCreate(&m.done, 0), "cuEventCreate (graph capture)");
    m.api = a;
  }
  if (detail::capturing() != nullptr) throw std::logic_error("PassGraph::run inside another capture");
  const DriverApi& a = *m.api;
  m.wait_previous();
  m.chunk = 0;
  m.used = 0;
  m.runs++;

  detail::Capture c;
  c.stream = m.stream;
  c.stage = [&m](const void* src, size_t bytes) -> const void* { return m.stage(src, bytes); };
  check(a, a.cuStreamBeginCapture(m.stream, detail::kCaptureModeRelaxed), "cuStreamBeginCapture");
  detail::set_capturing(&c);
  detail::CUgraph g = nullptr;
  try {
    enqueue();
  } catch (...) {
    detail::set_capturing(nullptr);
    if (a.cuStreamEndCapture(m.stream, &g) == 0 && g != nullptr) a.cuGraphDestroy(g);
    m.frees = std::move(c.frees);  // nothing captured ran; what ran before has been waited for
    m.free_now();
    throw;
  }
  detail::set_capturing(nullptr);
  m.frees = std::move(c.frees);  // rare: a scratch buffer grew inside the pass
  check(a, a.cuStreamEndCapture(m.stream, &g), "cuStreamEndCapture");
  struct Destroy {
    const DriverApi& a;
    detail::CUgraph g;
    ~Destroy() {
      if (g != nullptr) a.cuGraphDestroy(g);
    }
  } destroy{a, g};
  if (c.signature != detail::Capture{}.signature) {
    check(a, a.cuGraphLaunch(m.executable(g, c.signature), nullptr), "cuGraphLaunch");
    dev.count_graph_launch(c.kernels);
    check(a, a.cuEventRecord(m.done, nullptr), "cuEventRecord (graph)");
    m.launched = true;
  }
  if (!m.launched) m.free_now();
}

void PassGraph::settle() {
  if (impl_->api != nullptr && !impl_->frees.empty()) impl_->wait_previous();
}

uint64_t PassGraph::instantiations() const { return impl_->instantiations; }
uint64_t PassGraph::updates() const { return impl_->updates; }
size_t PassGraph::shapes() const { return impl_->shapes.size(); }
uint64_t PassGraph::all_instantiations() { return g_instantiations.load(std::memory_order_relaxed); }
uint64_t PassGraph::all_updates() { return g_updates.load(std::memory_order_relaxed); }

bool PassGraph::enabled() {
  int v = g_enabled.load(std::memory_order_relaxed);
  if (v < 0) {
    v = enabled_by_environment() ? 1 : 0;
    g_enabled.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}
void PassGraph::set_enabled(bool on) { g_enabled.store(on ? 1 : 0, std::memory_order_relaxed); }

}  // namespace ds4::cuda
