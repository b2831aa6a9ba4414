// mlock / CUDA host registration of the weight mapping; see weight_pin.hpp.
#include "daemon/weight_pin.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/planner/byte_size.hpp"

namespace ds4::daemon {
namespace {

std::string limit_text(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : planner::format_gib(v); }

}  // namespace

WeightPin WeightPin::pin(config::PinMode mode, const void* base, size_t bytes) {
  WeightPin p;
  p.mode_ = mode;
  p.base_ = base;
  p.bytes_ = bytes;
  if (mode == config::PinMode::None || bytes == 0) return p;
  if (mode == config::PinMode::Lock) {
    if (mlock(base, bytes) != 0) {
      const int err = errno;
      rlimit rl{};
      getrlimit(RLIMIT_MEMLOCK, &rl);
      p.mode_ = config::PinMode::None;
      throw PinError("--pin lock: mlock of " + planner::format_gib(bytes) + " of weights failed (" +
                     std::strerror(err) + "): RLIMIT_MEMLOCK is " + limit_text(rl.rlim_cur) + " (soft) / " +
                     limit_text(rl.rlim_max) +
                     " (hard). Set LimitMEMLOCK=infinity in the systemd unit (ds4d-supervisor raises it for "
                     "the daemon when it runs as root), or use --pin none or --pin cuda");
    }
    return p;
  }
  try {
    p.registration_ = cuda::HostRegistration(base, bytes);
  } catch (const std::exception& e) {
    p.mode_ = config::PinMode::None;
    throw PinError(std::string("--pin cuda: ") + e.what() + " (use --pin lock or --pin none)");
  }
  return p;
}

void WeightPin::release() noexcept {
  if (mode_ == config::PinMode::Lock && base_ != nullptr) munlock(base_, bytes_);
  registration_ = cuda::HostRegistration();
  mode_ = config::PinMode::None;
  base_ = nullptr;
  bytes_ = 0;
}

WeightPin::~WeightPin() { release(); }

WeightPin::WeightPin(WeightPin&& o) noexcept
    : mode_(std::exchange(o.mode_, config::PinMode::None)),
      base_(std::exchange(o.base_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      registration_(std::move(o.registration_)) {}

WeightPin& WeightPin::operator=(WeightPin&& o) noexcept {
  if (this != &o) {
    release();
    mode_ = std::exchange(o.mode_, config::PinMode::None);
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    registration_ = std::move(o.registration_);
  }
  return *this;
}

}  // namespace ds4::daemon
