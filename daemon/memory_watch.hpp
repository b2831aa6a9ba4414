#pragma once
// The daemon's memory watch: polls MemAvailable (/proc/meminfo) and PSI memory pressure
// (/proc/pressure/memory) every memory.poll_ms, exports both as metrics, and answers the serving
// layer's admission gate: new work is refused (503) while MemAvailable is below memory.floor or
// the PSI "full" avg10 (the share of time every task stalled on memory) is above
// memory.psi_full_avg10_limit, with a message that says which and by how much.
//
// Caveat (docs/memory.md §memavailable-and-mapped-weights): mmapped weights that are not mlocked count as reclaimable
// page cache in MemAvailable, so with --pin none or cuda MemAvailable overstates what is free; PSI still sees the
// thrashing. With --pin lock the weights are Unevictable and MemAvailable is honest.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config/config.hpp"

namespace ds4::daemon {

struct MemorySample {
  uint64_t mem_total = 0;
  uint64_t mem_available = 0;
  std::optional<double> psi_some_avg10;  // percent
  std::optional<double> psi_full_avg10;
};

// Reads one sample. PSI is optional (an empty path or a kernel without PSI leaves it unset);
// meminfo errors throw std::runtime_error naming the file.
MemorySample sample_memory(const config::Config::Memory& cfg);

// nullopt: admit; otherwise the reason new work is refused.
std::optional<std::string> refusal_reason(const MemorySample& s, const config::Config::Memory& cfg);

class MemoryWatch {
 public:
  using SampleSink = std::function<void(const MemorySample&)>;  // e.g. metrics gauges

  MemoryWatch(config::Config::Memory cfg, SampleSink sink);
  ~MemoryWatch();  // stop()

  void start();  // takes the first sample synchronously (so the gate is valid at once), then polls
  void stop();

  // The admission gate: the reason to refuse, from the latest sample.
  std::optional<std::string> admission() const;
  MemorySample latest() const;

 private:
  void poll_once();
  void loop();

  config::Config::Memory cfg_;
  SampleSink sink_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  MemorySample latest_;
  std::optional<std::string> refusal_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ds4::daemon
