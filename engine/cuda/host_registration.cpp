// See host_registration.hpp. Read-only registration is asked for only where the device supports
// it (a read-only file mapping cannot be registered writable on the others, so there the driver's
// error says so).
#include "engine/cuda/host_registration.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "engine/cuda/device.hpp"
#include "engine/cuda/driver_api.hpp"

namespace ds4::cuda {

HostRegistration::HostRegistration(const void* base, size_t bytes) {
  const DeviceInfo info = probe();
  if (!info.usable) throw std::runtime_error("cannot register host memory for the GPU: " + info.why_not);
  if (base == nullptr || bytes == 0) throw std::invalid_argument("HostRegistration: empty range");
  Device::open();  // the context must be current
  const detail::DriverApi& a = *detail::driver(nullptr);
  const unsigned flags = detail::kHostRegisterDeviceMap | (info.read_only_register ? detail::kHostRegisterReadOnly : 0);
  const std::string what = "cuMemHostRegister of " + std::to_string(bytes >> 20) + " MiB";
  detail::check(a, a.cuMemHostRegister(const_cast<void*>(base), bytes, flags), what.c_str());
  detail::CUdeviceptr dev = 0;
  const detail::CUresult r = a.cuMemHostGetDevicePointer(&dev, const_cast<void*>(base), 0);
  if (r != 0) {
    a.cuMemHostUnregister(const_cast<void*>(base));
    detail::check(a, r, "cuMemHostGetDevicePointer");
  }
  base_ = base;
  bytes_ = bytes;
  device_base_ = dev;
}

uint64_t HostRegistration::device_address(const void* p) const {
  const auto* b = static_cast<const unsigned char*>(base_);
  const auto* q = static_cast<const unsigned char*>(p);
  if (base_ == nullptr || q < b || q >= b + bytes_)
    throw std::out_of_range("HostRegistration: the pointer is outside the registered range");
  return device_base_ + static_cast<uint64_t>(q - b);
}

void HostRegistration::release() noexcept {
  if (base_ != nullptr) detail::driver(nullptr)->cuMemHostUnregister(const_cast<void*>(base_));
  base_ = nullptr;
  bytes_ = 0;
  device_base_ = 0;
}

HostRegistration::~HostRegistration() { release(); }

HostRegistration::HostRegistration(HostRegistration&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      device_base_(std::exchange(o.device_base_, 0)) {}

HostRegistration& HostRegistration::operator=(HostRegistration&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    device_base_ = std::exchange(o.device_base_, 0);
  }
  return *this;
}

}  // namespace ds4::cuda
