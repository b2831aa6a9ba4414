// ThreadPool: covers every index exactly once, uses at most size() threads, runs nested loops
// inline, propagates exceptions, keeps every chunk at least `grain` items (a loop too small for
// two chunks runs on the caller), and survives back-to-back jobs whether its workers are
// spinning or asleep between them.
#include "engine/kernels/thread_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ds4::kernels {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (unsigned threads : {1u, 2u, 3u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 5, 64, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        ASSERT_LE(0, b);
        ASSERT_LT(b, e);
        ASSERT_LE(e, n);
        for (int64_t i = b; i < e; i++) hits[static_cast<size_t>(i)]++;
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
  }
}

TEST(ThreadPool, UsesAtMostSizeThreadsIncludingCaller) {
  ThreadPool pool(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  for (int rep = 0; rep < 50; rep++)
    pool.parallel_for(64, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lk(mu);
      ids.insert(std::this_thread::get_id());
    });
  EXPECT_LE(ids.size(), 2u);
}

TEST(ThreadPool, NestedLoopRunsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++) pool.parallel_for(10, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 80);
}

TEST(ThreadPool, RethrowsTaskException) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](int64_t b, int64_t e) {
                                   if (b <= 50 && 50 < e) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  std::atomic<int64_t> total{0};  // still usable afterwards
  pool.parallel_for(100, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 100);
}

TEST(ThreadPool, ChunksHoldAtLeastGrainItems) {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    ThreadPool pool(threads);
    for (int64_t grain : {1, 3, 16, 1000})
      for (int64_t n : {1, 2, 15, 16, 31, 32, 33, 100, 1001, 5000}) {
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        std::set<std::thread::id> ids;
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          std::lock_guard<std::mutex> lk(mu);
          ranges.emplace_back(b, e);
          ids.insert(std::this_thread::get_id());
        });
        std::sort(ranges.begin(), ranges.end());
        ASSERT_FALSE(ranges.empty());
        EXPECT_EQ(ranges.front().first, 0);
        EXPECT_EQ(ranges.back().second, n);
        for (size_t i = 0; i + 1 < ranges.size(); i++) {
          EXPECT_EQ(ranges[i].second, ranges[i + 1].first);
          EXPECT_GE(ranges[i].second - ranges[i].first, grain) << "n " << n << " grain " << grain;
        }
        const ThreadPool::Split s = pool.split(n, grain);
        EXPECT_EQ(static_cast<int64_t>(ranges.size()), s.chunks);
        EXPECT_LE(s.chunks, 4 * static_cast<int64_t>(threads));
        if (n < 2 * grain || threads == 1) {  // not worth a second thread: one range, on the caller
          EXPECT_EQ(ranges.size(), 1u);
          EXPECT_EQ(*ids.begin(), std::this_thread::get_id());
        }
      }
  }
}

TEST(ThreadPool, GrainForBytesMeetsTheMinimumTaskSize) {
  EXPECT_EQ(ThreadPool::grain_for_bytes(ThreadPool::kMinTaskBytes), 1);
  EXPECT_EQ(ThreadPool::grain_for_bytes(2 * ThreadPool::kMinTaskBytes), 1);
  EXPECT_EQ(ThreadPool::grain_for_bytes(1024), static_cast<int64_t>(ThreadPool::kMinTaskBytes / 1024));
  EXPECT_EQ(ThreadPool::grain_for_bytes(1000) * 1000 >= ThreadPool::kMinTaskBytes, true);
  EXPECT_EQ(ThreadPool::grain_for_bytes(0), 1);
}

TEST(ThreadPool, JobsAfterWorkersFellAsleepStillComplete) {
  // Pauses longer than the workers' spin make them sleep in the kernel between jobs; every job
  // must still cover its range exactly once, whether a worker wakes in time to help or not.
  ThreadPool pool(3);
  for (int rep = 0; rep < 40; rep++) {
    if (rep % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    const int64_t n = 64 + rep;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "rep " << rep;
  }
}

TEST(ThreadPool, ManyTinyJobsBackToBack) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int rep = 0; rep < 20000; rep++) pool.parallel_for(2, [&](int64_t b, int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 40000);
}

TEST(ThreadPool, DefaultSizeIsHardwareConcurrency) {
  ThreadPool pool;
  EXPECT_EQ(pool.size(), std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace ds4::kernels
