// Memory watch and admission decisions; see memory_watch.hpp.
#include "daemon/memory_watch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/planner/byte_size.hpp"
#include "host/host_memory.hpp"

namespace ds4::daemon {

MemorySample sample_memory(const config::Config::Memory& cfg) {
  const host::MemInfo m = host::read_meminfo(cfg.meminfo_path);
  MemorySample s;
  s.mem_total = m.mem_total;
  s.mem_available = m.mem_available;
  if (!cfg.psi_path.empty()) {
    try {
      const host::Psi p = host::read_psi(cfg.psi_path);
      s.psi_some_avg10 = p.some.avg10;
      if (p.has_full) s.psi_full_avg10 = p.full.avg10;
    } catch (const std::exception& e) {
      spdlog::debug("PSI unavailable: {}", e.what());
    }
  }
  return s;
}

std::optional<std::string> refusal_reason(const MemorySample& s, const config::Config::Memory& cfg) {
  // The daemon hands over its planned configuration, so an `auto` floor is resolved by now.
  const uint64_t floor = cfg.floor.value();
  if (s.mem_available < floor)
    return fmt::format("memory is low: MemAvailable {} is below the {} floor (memory.floor); retry later",
                       planner::format_gib(s.mem_available), planner::format_gib(floor));
  if (s.psi_full_avg10 && *s.psi_full_avg10 > cfg.psi_full_avg10_limit)
    return fmt::format(
        "memory pressure is high: PSI full avg10 {:.2f}% is above {:.2f}% "
        "(memory.psi_full_avg10_limit); retry later",
        *s.psi_full_avg10, cfg.psi_full_avg10_limit);
  return std::nullopt;
}

MemoryWatch::MemoryWatch(config::Config::Memory cfg, SampleSink sink) : cfg_(std::move(cfg)), sink_(std::move(sink)) {}

MemoryWatch::~MemoryWatch() { stop(); }

void MemoryWatch::poll_once() {
  MemorySample s;
  std::optional<std::string> refusal;
  try {
    s = sample_memory(cfg_);
    refusal = refusal_reason(s, cfg_);
  } catch (const std::exception& e) {
    // Without meminfo we cannot tell; say so rather than admit blindly.
    refusal = std::string("memory state unknown: ") + e.what();
  }
  if (sink_) sink_(s);  // metrics first, so they are current once the decision is visible
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    changed = refusal != refusal_;
    latest_ = s;
    refusal_ = refusal;
  }
  if (changed) {
    if (refusal) spdlog::warn("refusing new work: {}", *refusal);
    else spdlog::info("memory recovered: admitting new work (MemAvailable {})", planner::format_gib(s.mem_available));
  }
}

void MemoryWatch::start() {
  poll_once();
  thread_ = std::thread([this] { loop(); });
}

void MemoryWatch::loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(cfg_.poll_ms), [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    poll_once();
    lock.lock();
  }
}

void MemoryWatch::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> MemoryWatch::admission() const {
  std::lock_guard lock(mu_);
  return refusal_;
}

MemorySample MemoryWatch::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

}  // namespace ds4::daemon
