#pragma once
// The model's weights as the device reads them (docs/cuda.md §placement): in place through a
// registration of the GGUF mapping on a unified-memory device, or one device copy of the mapping
// on a discrete one. Either way a tensor's device address is the mapping's base on the device plus
// the tensor's offset in the mapping, so one table of host tensors (model::Weights) serves both.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/cuda/device.hpp"
#include "engine/cuda/host_registration.hpp"
#include "engine/cuda/matvec.hpp"
#include "engine/cuda/placement.hpp"
#include "engine/model/model.hpp"
#include "engine/model/weights.hpp"

namespace ds4::model::device {
using cuda::DeviceBuffer;
using cuda::DeviceSpan;
using cuda::DeviceWeight;
using cuda::HostRegistration;
using cuda::WeightPlacement;

class DeviceWeights {
 public:
  // [base, base + bytes) is the GGUF mapping every tensor of the model lies in. InPlace registers
  // it (a registration the caller already holds, e.g. --pin cuda's, may be passed instead);
  // Copied allocates one device buffer of `bytes` and uploads the mapping. Throws
  // std::invalid_argument for DoesNotFit, std::runtime_error from the driver.
  // `beside`, when given, answers for tensors outside this mapping (an MTP sidecar's weights with
  // the base model's beside them: the block reads its own, the embedding and LM head the base's).
  DeviceWeights(const void* base, size_t bytes, WeightPlacement placement, const HostRegistration* pinned = nullptr,
                std::shared_ptr<const DeviceWeights> beside = nullptr);

  WeightPlacement placement() const { return placement_; }
  // Where tensor `t`'s bytes are on the device; throws std::out_of_range for a tensor outside
  // the mapping (and beside's), std::invalid_argument for an absent one.
  DeviceSpan at(const model::Tensor& t) const;
  // A 2-D tensor as a matvec weight (rows ne[1] of ne[0] inputs), and expert e of a 3-D one.
  DeviceWeight matrix(const model::Tensor& t) const;
  DeviceWeight expert(const model::Tensor& t, int64_t e) const;

 private:
  const unsigned char* base_;
  size_t bytes_;
  WeightPlacement placement_;
  HostRegistration registration_;  // InPlace, unless the caller's was passed
  DeviceBuffer copy_;              // Copied
  uint64_t device_base_ = 0;
  std::shared_ptr<const DeviceWeights> beside_;
};

// The weights of a loaded model placed for device 0 (LoadOptions::device Cuda): choose_placement
// with the device's free memory, `reserve` bytes kept for the contexts' state and
// cuda::kWorkspaceBytes for the workspace. `reason` receives
// the placement's sentence. Throws std::runtime_error naming what is missing (no driver or
// device, the weights do not fit) and std::invalid_argument for an Exact model.
std::shared_ptr<const DeviceWeights> place_weights(const Model::Impl& m, uint64_t reserve, std::string& reason);

}  // namespace ds4::model::device
