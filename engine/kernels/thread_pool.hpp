#pragma once
// A fixed-size pool of worker threads for data-parallel loops. parallel_for(n, grain, fn) cuts
// [0, n) into contiguous chunks of at least `grain` items that the workers and the calling
// thread take from a shared counter, so a pool of size T runs T threads in all (T-1 workers +
// the caller): no oversubscription. A loop too small for two chunks runs inline on the caller,
// and only as many workers as there are chunks beyond the caller's are woken.
// One parallel_for runs at a time per pool (calls from several threads are serialised); a
// parallel_for issued from inside a task runs inline on the calling thread.
// Which thread runs which chunk never changes a result the engine computes: every caller writes
// each output from one chunk only (engine/kernels/matmul.hpp, docs/arithmetic.md §threads).
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ds4::kernels {

class ThreadPool {
 public:
  // Bytes of work (weights or activations read) below which a chunk is not worth handing to
  // another thread: waking a worker and moving the outputs' cache lines costs about as much.
  static constexpr double kMinTaskBytes = 64.0 * 1024.0;

  // The grain (items per chunk) for items that each read about `bytes_per_item` bytes.
  static int64_t grain_for_bytes(double bytes_per_item);

  // n_threads == 0: std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(unsigned n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that execute work, the caller included.
  unsigned size() const { return n_threads_; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n); returns when all are done.
  // Every range except the last holds at least `grain` items (grain < 1 counts as 1).
  // The first exception thrown by fn is rethrown here (other chunks still run to completion).
  template <class Fn>
  void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
    run(
        n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(b, e); },
        &fn);
  }
  template <class Fn>
  void parallel_for(int64_t n, Fn&& fn) {
    parallel_for(n, 1, std::forward<Fn>(fn));
  }

  // How parallel_for(n, grain, ...) splits: `chunks` ranges of `chunk` items (the last shorter).
  struct Split {
    int64_t chunks, chunk;
  };
  Split split(int64_t n, int64_t grain) const;

 private:
  using Thunk = void (*)(void* ctx, int64_t begin, int64_t end);
  struct alignas(64) WorkerSlot {
    std::atomic<uint32_t> job{0};       // the job this worker is asked to join
    std::atomic<uint32_t> sleeping{0};  // 1 while it waits on `job` in the kernel
  };
  void run(int64_t n, int64_t grain, Thunk thunk, void* ctx);
  void worker_loop(unsigned index);
  void work_chunks();

  unsigned n_threads_;
  std::unique_ptr<WorkerSlot[]> slots_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises parallel_for callers
  uint32_t seq_ = 0;    // job number, bumped per parallel region (written under call_mu_)
  std::atomic<bool> stop_{false};
  // Job state: high word = seq * 2 + closed, low word = workers inside the job. A worker joins
  // only while its job is open, so the caller never waits for a worker that woke too late to help.
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<uint32_t> done_{0};  // seq of the last closed job whose workers all left
  std::atomic<uint32_t> caller_sleeping_{0};
  // current job (written before the job opens, read by workers that joined it)
  alignas(64) std::atomic<int64_t> next_{0};
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::mutex error_mu_;
  std::exception_ptr error_;
};

}  // namespace ds4::kernels
