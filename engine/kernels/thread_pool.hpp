#pragma once
// A fixed-size pool of worker threads for data-parallel loops. parallel_for(n, fn) cuts [0, n)
// into contiguous chunks that the workers and the calling thread take from a shared counter, so
// a pool of size T runs T threads in all (T-1 workers + the caller): no oversubscription.
// One parallel_for runs at a time per pool (calls from several threads are serialised); a
// parallel_for issued from inside a task runs inline on the calling thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ds4::kernels {

class ThreadPool {
 public:
  // n_threads == 0: std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(unsigned n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that execute work, the caller included.
  unsigned size() const { return n_threads_; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n); returns when all are done.
  // The first exception thrown by fn is rethrown here (other chunks still run to completion).
  template <class Fn>
  void parallel_for(int64_t n, Fn&& fn) {
    run(
        n, [](void* ctx, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<Fn>*>(ctx))(b, e); }, &fn);
  }

 private:
  using Thunk = void (*)(void* ctx, int64_t begin, int64_t end);
  void run(int64_t n, Thunk thunk, void* ctx);
  void worker_loop();
  void work_chunks();

  unsigned n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises parallel_for callers
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  // current job
  Thunk thunk_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
  unsigned busy_ = 0;
  std::exception_ptr error_;
};

}  // namespace ds4::kernels
