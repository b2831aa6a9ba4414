// detail::check, which every driver call goes through: a driver error becomes an exception naming
// the call, the driver's error name and code; the errors a CUDA context does not survive become
// DeviceLost, which the service turns into a restart (docs/cuda.md §device-lost), the others stay
// ordinary errors of the one request.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/cuda/device.hpp"
#include "engine/cuda/driver_api.hpp"

namespace {
using ds4::cuda::DeviceLost;
using ds4::cuda::detail::check;
using ds4::cuda::detail::DriverApi;

int error_name(int r, const char** s) {
  *s = r == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : nullptr;
  return *s != nullptr ? 0 : 1;
}

std::string thrown(int r, bool* lost) {
  DriverApi api;
  api.cuGetErrorString = error_name;
  try {
    check(api, r, "cuLaunchKernel");
  } catch (const DeviceLost& e) {
    *lost = true;
    return e.what();
  } catch (const std::runtime_error& e) {
    *lost = false;
    return e.what();
  }
  return "";
}

TEST(DriverCheck, StickyErrorsLoseTheDeviceOthersFailTheCall) {
  bool lost = false;
  EXPECT_EQ(thrown(0, &lost), "");
  EXPECT_EQ(thrown(700, &lost),
            "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700); the CUDA context is lost, the process must restart");
  EXPECT_TRUE(lost);
  for (int sticky : {214, 702, 714, 715, 716, 717, 718, 719}) {
    thrown(sticky, &lost);
    EXPECT_TRUE(lost) << sticky;
  }
  EXPECT_EQ(thrown(2, &lost), "cuLaunchKernel: CUDA_ERROR_OUT_OF_MEMORY (2)");
  EXPECT_FALSE(lost);
  for (int ordinary : {1, 201, 500, 701, 712}) {
    EXPECT_EQ(thrown(ordinary, &lost), "cuLaunchKernel: unknown CUDA error (" + std::to_string(ordinary) + ")")
        << ordinary;
    EXPECT_FALSE(lost) << ordinary;
  }
}

}  // namespace
