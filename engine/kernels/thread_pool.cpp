// Fixed-size worker pool for the engine's data-parallel loops (matmul rows, attention heads).
// Workers wait spin-then-sleep (kSpin, then a futex), small regions run inline on the caller, and
// a job's range is handed out in chunks from an atomic counter. Why, and how a job is opened and
// closed: docs/arithmetic.md §threads.
#include "engine/kernels/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ds4::kernels {
namespace {

thread_local bool t_in_pool_task = false;

// How long a thread polls before it sleeps in the kernel: long enough to bridge the serial
// code between two parallel regions of a decode step, short enough that an idle engine gives
// its cores back at once.
constexpr std::chrono::nanoseconds kSpin{50'000};
// Chunks per thread: balance against a core stolen by another process, few atomics.
constexpr int64_t kChunksPerThread = 4;
constexpr uint64_t kLowMask = 0xffffffffull;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// futex on a 32-bit atomic: wait while *a == expected; wake one / all waiters.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
void sleep_while_equal(std::atomic<uint32_t>& a, uint32_t expected) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
  a.wait(expected);
#endif
}
void wake_all(std::atomic<uint32_t>& a) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
#else
  a.notify_all();
#endif
}

// Polls `a` until it differs from `old`, for at most kSpin; true if it changed.
bool spin_while_equal(const std::atomic<uint32_t>& a, uint32_t old) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; i++) {
    if (a.load(std::memory_order_acquire) != old) return true;
    cpu_relax();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > kSpin) return false;
  }
}

// Waits until `a` != old: spin first, then sleep on the futex with `sleeping` raised so the
// writer knows a wake-up call is needed (both sides use seq_cst: the writer stores `a` then
// reads `sleeping`, the waiter stores `sleeping` then reads `a`, so one of them sees the other).
uint32_t wait_for_change(std::atomic<uint32_t>& a, uint32_t old, std::atomic<uint32_t>& sleeping) {
  if (!spin_while_equal(a, old)) {
    sleeping.store(1, std::memory_order_seq_cst);
    while (a.load(std::memory_order_seq_cst) == old) sleep_while_equal(a, old);
    sleeping.store(0, std::memory_order_relaxed);
  }
  return a.load(std::memory_order_acquire);
}

uint64_t open_tag(uint32_t seq) { return uint64_t(seq & 0x7fffffffu) << 33; }  // closed bit (32) clear
constexpr uint64_t kClosed = 1ull << 32;

}  // namespace

int64_t ThreadPool::grain_for_bytes(double bytes_per_item) {
  if (!(bytes_per_item > 0)) return 1;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(kMinTaskBytes / bytes_per_item)));
}

ThreadPool::Split ThreadPool::split(int64_t n, int64_t grain) const {
  grain = std::max<int64_t>(1, grain);
  if (n <= 0) return {0, 0};
  const int64_t chunks = std::clamp<int64_t>(n / grain, 1, kChunksPerThread * n_threads_);
  if (chunks == 1 || n_threads_ == 1) return {1, n};
  const int64_t chunk = (n + chunks - 1) / chunks;  // >= grain since chunks <= n / grain
  return {(n + chunk - 1) / chunk, chunk};
}

ThreadPool::ThreadPool(unsigned n_threads) {
  if (n_threads == 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  slots_ = std::make_unique<WorkerSlot[]>(n_threads_);
  workers_.reserve(n_threads_ - 1);
  for (unsigned i = 0; i + 1 < n_threads_; i++) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  for (unsigned i = 0; i + 1 < n_threads_; i++) {
    slots_[i].job.fetch_add(1, std::memory_order_seq_cst);  // any change wakes it; it sees stop_
    wake_all(slots_[i].job);
  }
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
      std::lock_guard<std::mutex> lk(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
  t_in_pool_task = was_in_task;
}

void ThreadPool::worker_loop(unsigned index) {
  WorkerSlot& slot = slots_[index];
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_change(slot.job, seen, slot.sleeping);
    if (stop_.load(std::memory_order_acquire)) return;
    // Join the job only while it is still the open job `seen`.
    uint64_t st = state_.load(std::memory_order_acquire);
    bool joined = false;
    while ((st & ~kLowMask) == open_tag(seen))
      if (state_.compare_exchange_weak(st, st + 1, std::memory_order_acq_rel)) {
        joined = true;
        break;
      }
    if (!joined) continue;
    work_chunks();
    const uint64_t prev = state_.fetch_sub(1, std::memory_order_acq_rel);
    if ((prev & kLowMask) == 1 && (prev & kClosed) != 0) {  // last one out of a closed job
      done_.store(seen, std::memory_order_seq_cst);
      if (caller_sleeping_.load(std::memory_order_seq_cst) != 0) wake_all(done_);
    }
  }
}

void ThreadPool::run(int64_t n, int64_t grain, Thunk thunk, void* ctx) {
  if (n <= 0) return;
  const Split s = split(n, grain);
  if (s.chunks <= 1 || t_in_pool_task) {
    thunk(ctx, 0, n);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  seq_ = (seq_ + 1) & 0x7fffffffu;
  if (seq_ == 0) seq_ = 1;  // 0 is every slot's initial value
  thunk_ = thunk;
  ctx_ = ctx;
  n_ = n;
  chunk_ = s.chunk;
  next_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  state_.store(open_tag(seq_), std::memory_order_seq_cst);  // publishes the fields above
  const auto helpers = static_cast<unsigned>(std::min<int64_t>(n_threads_ - 1, s.chunks - 1));
  for (unsigned i = 0; i < helpers; i++) {
    slots_[i].job.store(seq_, std::memory_order_seq_cst);
    if (slots_[i].sleeping.load(std::memory_order_seq_cst) != 0) wake_all(slots_[i].job);
  }
  work_chunks();
  // Out of chunks: close the job and wait for the workers still inside it.
  const uint64_t st = state_.fetch_or(kClosed, std::memory_order_acq_rel);
  if ((st & kLowMask) != 0 && done_.load(std::memory_order_acquire) != seq_) {
    for (;;) {
      const uint32_t d = done_.load(std::memory_order_acquire);
      if (d == seq_) break;
      if (spin_while_equal(done_, d)) continue;
      caller_sleeping_.store(1, std::memory_order_seq_cst);
      if (done_.load(std::memory_order_seq_cst) == d) sleep_while_equal(done_, d);
      caller_sleeping_.store(0, std::memory_order_relaxed);
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  std::exception_ptr err = std::move(error_);
  error_ = nullptr;
  if (err) std::rethrow_exception(err);
}

}  // namespace ds4::kernels
