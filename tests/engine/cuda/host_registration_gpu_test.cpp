// Weights read in place (docs/cuda.md §placement): a quantized weight in registered host memory,
// used through map_weight, gives the device copy's bits; the registration refuses overlaps and
// pointers outside it, and releases on destruction. Skips with the reason where no GPU is usable
// (cuda_emulated_gpu_tests runs it on the emulator, an integrated device like GB10).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/cuda/host_registration.hpp"
#include "engine/cuda/matvec.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/cuda/gpu_test_support.hpp"

namespace {
using namespace ds4::cuda::test;
using ds4::quant::Type;

TEST(HostRegistrationGpu, MappedWeightGivesTheCopysBits) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(7);
  constexpr int64_t kRows = 9, kCols = 256;
  const size_t rb = ds4::quant::row_bytes(Type::Q8_0, kCols);
  // Page-aligned host memory, as a GGUF mapping is.
  std::vector<uint8_t> storage(rb * kRows + 8192);
  uint8_t* host = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(storage.data()) + 4095) & ~uintptr_t(4095));
  for (int64_t r = 0; r < kRows; r++) {
    const auto row = randn(rng, kCols, 1.0f);
    ds4::quant::quantize_row(Type::Q8_0, row.data(), host + r * rb, kCols, nullptr);
  }
  const size_t arb = ds4::quant::act_row_bytes(Type::Q8_0, kCols);
  std::vector<uint8_t> act(arb * 2);
  for (int t = 0; t < 2; t++) {
    const auto x = randn(rng, kCols, 1.0f);
    ds4::quant::quantize_activation(Type::Q8_0, x.data(), act.data() + t * arb, kCols);
  }
  ds4::cuda::DeviceBuffer dact(act.size()), out_copy(2 * kRows * sizeof(float)), out_mapped(2 * kRows * sizeof(float));
  dact.upload(act.data(), act.size());

  const ds4::cuda::HostRegistration reg(host, rb * kRows);
  const auto mapped = ds4::cuda::map_weight(Type::Q8_0, reg, host, kRows, kCols);
  EXPECT_EQ(mapped.owned.bytes(), 0u);
  if (ds4::cuda::probe().host_pointer_mapped) {
    EXPECT_EQ(mapped.data.ptr(), reinterpret_cast<uintptr_t>(host));
  }
  const auto copy = ds4::cuda::upload_weight(Type::Q8_0, host, kRows, kCols);
  ds4::cuda::matvec(copy, dact, arb, 2, out_copy);
  ds4::cuda::matvec(mapped, dact, arb, 2, out_mapped);
  EXPECT_EQ(first_difference(download(out_mapped, 2 * kRows), download(out_copy, 2 * kRows)), "");
  // Rows past the registration are refused before any launch.
  EXPECT_THROW(ds4::cuda::map_weight(Type::Q8_0, reg, host, kRows + 1, kCols), std::out_of_range);
}

TEST(HostRegistrationGpu, RefusesOverlapsAndReleasesOnDestruction) {
  SKIP_WITHOUT_GPU();
  std::vector<uint8_t> storage(3 * 4096);
  uint8_t* host = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(storage.data()) + 4095) & ~uintptr_t(4095));
  {
    const ds4::cuda::HostRegistration reg(host, 4096);
    EXPECT_THROW(reg.device_address(host + 4096), std::out_of_range);
    try {
      ds4::cuda::HostRegistration again(host, 4096);
      ADD_FAILURE() << "a second registration of the same range succeeded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("cuMemHostRegister of"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(ds4::cuda::HostRegistration(host, 4096));  // released by the destructor
  EXPECT_THROW(ds4::cuda::HostRegistration(nullptr, 4096), std::invalid_argument);
}

}  // namespace
