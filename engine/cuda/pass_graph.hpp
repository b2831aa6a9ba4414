#pragma once
// A pass launched as one CUDA graph (docs/cuda.md §graphs). A decode step queues many small
// kernels; launched one by one, the GPU idles between them while the host queues the next. A
// PassGraph captures what a function queues (kernels, uploads, device copies, memsets) on a stream
// of its own and launches it as one graph on the default stream, ordered with every other call as
// the launches would have been: the same kernels, arguments and order, so the same bits.
// Executables are kept by shape (the nodes' kinds in order, kernels by function): a capture of a
// known shape only updates the kept one's parameters, far cheaper than making a new one.
//
// Concurrency: one PassGraph, one host thread at a time. Other threads keep launching on the
// default stream while it captures.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace ds4::cuda {

class PassGraph {
 public:
  PassGraph();
  ~PassGraph();
  PassGraph(const PassGraph&) = delete;
  PassGraph& operator=(const PassGraph&) = delete;

  // Runs enqueue() with this thread's device calls captured, then launches what it queued as one
  // graph and returns without waiting for it; it has run once anything waits for the device (a
  // download). Host memory uploaded inside is staged, so it may change at once, as with plain
  // uploads. enqueue must not wait for the device: a download, synchronize or timing inside it
  // throws std::logic_error. An exception from enqueue propagates and nothing it queued runs (a
  // capture runs nothing); the driver's errors are std::runtime_error (DeviceLost when sticky).
  void run(const std::function<void()>& enqueue);

  // Frees the device memory the last capture released (a scratch buffer that grew inside it) once
  // its graph has run. Call it after reading the pass's results, when the graph has run and this
  // does not wait; otherwise the next run() frees it.
  void settle();

  uint64_t instantiations() const;  // executables made (a shape seen for the first time)
  uint64_t updates() const;         // captures that reused the executable of their shape
  size_t shapes() const;            // executables kept now (at most kMaxShapes, least recent out)
  static constexpr size_t kMaxShapes = 16;
  // The same two counts over every PassGraph of the process (tests, benches).
  static uint64_t all_instantiations();
  static uint64_t all_updates();

  // Whether the device forward launches its decode and verify passes as graphs: yes unless the
  // environment says DS4D_CUDA_GRAPHS=off (or 0) when first asked; set_enabled overrides that
  // (the benches' side-by-side comparison, tests).
  static bool enabled();
  static void set_enabled(bool on);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ds4::cuda
