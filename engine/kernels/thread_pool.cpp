// Fixed-size worker pool for the engine's data-parallel loops (matmul rows, activation rows).
// Workers sleep on a condition variable between jobs; a job is a range [0, n) handed out in
// contiguous chunks from an atomic counter, so a busy core (other processes on this machine)
// slows its chunk without stalling the rest. The calling thread works too, and a nested
// parallel_for runs inline, so the engine never runs more threads than the pool size.
#include "engine/kernels/thread_pool.hpp"

#include <algorithm>

namespace ds4::kernels {
namespace {
thread_local bool t_in_pool_task = false;
}

ThreadPool::ThreadPool(unsigned n_threads) {
  if (n_threads == 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  workers_.reserve(n_threads_ - 1);
  for (unsigned i = 0; i + 1 < n_threads_; i++) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work_chunks() {
  const bool was_in_task = t_in_pool_task;
  t_in_pool_task = true;
  for (;;) {
    const int64_t b = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (b >= n_) break;
    const int64_t e = std::min(n_, b + chunk_);
    try {
      thunk_(ctx_, b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
  t_in_pool_task = was_in_task;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    work_chunks();
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run(int64_t n, Thunk thunk, void* ctx) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1 || t_in_pool_task) {
    thunk(ctx, 0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    thunk_ = thunk;
    ctx_ = ctx;
    n_ = n;
    // ~4 chunks per thread: balance against a core stolen by another process, few atomics.
    chunk_ = std::max<int64_t>(1, (n + 4 * n_threads_ - 1) / (4 * n_threads_));
    next_.store(0, std::memory_order_relaxed);
    busy_ = n_threads_ - 1;
    error_ = nullptr;
    generation_++;
  }
  wake_.notify_all();
  work_chunks();
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lk(mu_);
    done_.wait(lk, [&] { return busy_ == 0; });
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace ds4::kernels
