// See device_weights.hpp. The copy goes up in 64 MiB pieces so no second host buffer is needed.
#include "engine/model/device/device_weights.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/model/model_impl.hpp"

namespace ds4::model::device {

DeviceWeights::DeviceWeights(const void* base, size_t bytes, WeightPlacement placement, const HostRegistration* pinned,
                             std::shared_ptr<const DeviceWeights> beside)
    : base_(static_cast<const unsigned char*>(base)), bytes_(bytes), placement_(placement), beside_(std::move(beside)) {
  switch (placement) {
    case WeightPlacement::InPlace:
      if (pinned != nullptr) {
        device_base_ = pinned->device_address(base);
        pinned->device_address(base_ + bytes - 1);  // the whole mapping must be inside
      } else {
        registration_ = HostRegistration(base, bytes);
        device_base_ = registration_.device_address(base);
      }
      break;
    case WeightPlacement::Copied: {
      copy_ = DeviceBuffer(bytes);
      constexpr size_t kPiece = size_t(64) << 20;
      for (size_t off = 0; off < bytes; off += kPiece) copy_.upload(base_ + off, std::min(kPiece, bytes - off), off);
      device_base_ = copy_.ptr();
      break;
    }
    case WeightPlacement::DoesNotFit:
      throw std::invalid_argument("DeviceWeights: the weights do not fit the device (see the placement's reason)");
  }
}

DeviceSpan DeviceWeights::at(const model::Tensor& t) const {
  if (!t.present()) throw std::invalid_argument("DeviceWeights: tensor " + t.name + " is absent");
  if (t.data < base_ || t.bytes > bytes_ || size_t(t.data - base_) > bytes_ - t.bytes) {
    if (beside_) return beside_->at(t);
    throw std::out_of_range("DeviceWeights: tensor " + t.name + " is outside the model mapping");
  }
  return {device_base_ + uint64_t(t.data - base_), t.bytes};
}

DeviceWeight DeviceWeights::matrix(const model::Tensor& t) const {
  const int64_t rows = t.ndim >= 2 ? int64_t(t.ne[1]) : 1, cols = int64_t(t.ne[0]);
  return cuda::weight_over(t.type, at(t), rows, cols);
}

DeviceWeight DeviceWeights::expert(const model::Tensor& t, int64_t e) const {
  if (t.ndim != 3 || e < 0 || uint64_t(e) >= t.ne[2])
    throw std::out_of_range("DeviceWeights: expert " + std::to_string(e) + " of " + t.name);
  const DeviceSpan all = at(t);
  const size_t per = all.bytes() / t.ne[2];
  return cuda::weight_over(t.type, all.sub(size_t(e) * per, per), int64_t(t.ne[1]), int64_t(t.ne[0]));
}

std::shared_ptr<const DeviceWeights> place_weights(const Model::Impl& m, uint64_t reserve, std::string& reason) {
  if (m.ex.exact)
    throw std::invalid_argument("the CUDA backend computes the Fast order only: load the model with Fast arithmetic");
  // The whole mapping goes up (or is registered) at once.
  const cuda::Placement p = cuda::place_on_device(m.file.size(), reserve);
  reason = p.reason;
  if (p.weights == WeightPlacement::DoesNotFit) throw std::runtime_error(p.reason);
  return std::make_shared<const DeviceWeights>(m.file.base(), m.file.size(), p.weights);
}

}  // namespace ds4::model::device
