// The weight placement decision (engine/cuda/placement.hpp) on the two device kinds we serve: a
// unified-memory GB10 reads the mapping in place whatever the sizes; a discrete H100 gets a copy
// only while weights, state and workspace fit its free memory less the margin, and otherwise the
// refusal names the figures and what to change.
#include "engine/cuda/placement.hpp"

#include <gtest/gtest.h>

namespace {
using ds4::cuda::WeightPlacement;
constexpr uint64_t kGiB = 1ull << 30;

ds4::cuda::DeviceInfo device(const char* name, bool integrated, uint64_t total) {
  ds4::cuda::DeviceInfo d;
  d.usable = true;
  d.name = name;
  d.integrated = integrated;
  d.total_memory = total;
  return d;
}

TEST(Placement, UnifiedMemoryReadsTheMappingInPlace) {
  const auto gb10 = device("NVIDIA GB10", true, 119 * kGiB);
  const auto p = ds4::cuda::choose_placement(gb10, {81 * kGiB, 6 * kGiB, 2 * kGiB, 100 * kGiB});
  EXPECT_EQ(p.weights, WeightPlacement::InPlace);
  EXPECT_EQ(p.device_bytes, 8 * kGiB);  // state and workspace only: no second copy of the weights
  EXPECT_NE(p.reason.find("in place"), std::string::npos) << p.reason;
  EXPECT_STREQ(ds4::cuda::placement_name(p.weights), "in place");
}

TEST(Placement, DiscreteDeviceCopiesWhatFitsWithTheMargin) {
  const auto h100 = device("NVIDIA H100 80GB HBM3", false, 80 * kGiB);
  EXPECT_EQ(ds4::cuda::device_margin(h100), 4 * kGiB);
  EXPECT_EQ(ds4::cuda::device_margin(device("small", false, 2 * kGiB)), 256ull << 20);
  // 60 + 10 + 2 = 72 of 79 free leaves 7 >= 4: copied.
  auto p = ds4::cuda::choose_placement(h100, {60 * kGiB, 10 * kGiB, 2 * kGiB, 79 * kGiB});
  EXPECT_EQ(p.weights, WeightPlacement::Copied);
  EXPECT_EQ(p.device_bytes, 72 * kGiB);
  // Exactly the margin left: still copied; one byte more: refused.
  p = ds4::cuda::choose_placement(h100, {60 * kGiB, 13 * kGiB, 2 * kGiB, 79 * kGiB});
  EXPECT_EQ(p.weights, WeightPlacement::Copied);
  p = ds4::cuda::choose_placement(h100, {60 * kGiB, 13 * kGiB, 2 * kGiB + 1, 79 * kGiB});
  EXPECT_EQ(p.weights, WeightPlacement::DoesNotFit);
}

TEST(Placement, TheFullModelOnAnH100IsRefusedWithTheFigures) {
  const auto h100 = device("NVIDIA H100 80GB HBM3", false, 80 * kGiB);
  const auto p = ds4::cuda::choose_placement(h100, {81 * kGiB, 6 * kGiB, 2 * kGiB, 79 * kGiB});
  EXPECT_EQ(p.weights, WeightPlacement::DoesNotFit);
  EXPECT_EQ(p.device_bytes, 0u);
  for (const char* part : {"81.00 GiB", "79.00 GiB", "NVIDIA H100", "--backend cpu"})
    EXPECT_NE(p.reason.find(part), std::string::npos) << part << " missing from: " << p.reason;
}

}  // namespace
