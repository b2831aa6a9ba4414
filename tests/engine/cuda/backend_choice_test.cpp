// The backend decision on whatever machine runs the test: `cpu` never probes, `auto` falls back
// to the CPU with one line saying why, `cuda` is refused -- naming what is missing without a GPU,
// naming what the device does not implement yet with one. Never silently the CPU.
#include "engine/cuda/backend_choice.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "engine/cuda/device.hpp"

namespace {
using ds4::cuda::Backend;

TEST(BackendChoice, ParsesTheThreeNames) {
  EXPECT_EQ(ds4::cuda::parse_backend("auto"), Backend::Automatic);
  EXPECT_EQ(ds4::cuda::parse_backend("cpu"), Backend::Cpu);
  EXPECT_EQ(ds4::cuda::parse_backend("cuda"), Backend::Cuda);
  try {
    ds4::cuda::parse_backend("gpu");
    FAIL() << "accepted gpu";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'gpu' is not one of auto, cpu, cuda"), std::string::npos) << e.what();
  }
  for (Backend b : {Backend::Automatic, Backend::Cpu, Backend::Cuda})
    EXPECT_EQ(ds4::cuda::parse_backend(ds4::cuda::backend_name(b)), b);
}

TEST(BackendChoice, CpuIsQuiet) {
  const auto d = ds4::cuda::choose_backend(Backend::Cpu);
  EXPECT_EQ(d.use, Backend::Cpu);
  EXPECT_TRUE(d.log_line.empty());
}

TEST(BackendChoice, AutoFallsBackToTheCpuSayingWhy) {
  const auto d = ds4::cuda::choose_backend(Backend::Automatic);
  EXPECT_EQ(d.use, Backend::Cpu);
  const auto info = ds4::cuda::probe();
  if (!info.usable) {
    EXPECT_NE(d.log_line.find("no CUDA: " + info.why_not), std::string::npos) << d.log_line;
  } else {
    EXPECT_NE(d.log_line.find(info.name + " found"), std::string::npos) << d.log_line;
  }
}

TEST(BackendChoice, CudaIsRefusedSayingWhatIsMissing) {
  const auto info = ds4::cuda::probe();
  try {
    ds4::cuda::choose_backend(Backend::Cuda);
    FAIL() << "--backend cuda accepted although the forward is not on the device";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    if (!info.usable) {
      EXPECT_FALSE(info.why_not.empty());
      EXPECT_NE(m.find("no usable CUDA device: " + info.why_not), std::string::npos) << m;
    } else {
      EXPECT_NE(m.find("cannot run the model yet"), std::string::npos) << m;
    }
    EXPECT_EQ(m.rfind("--backend cuda: ", 0), 0u) << m;
  }
}

TEST(BackendChoice, ProbeNamesTheMissingDriverOrKernels) {
  const auto info = ds4::cuda::probe();
  if (info.usable) GTEST_SKIP() << "a usable GPU is present: " << info.name;
  // Without a GPU the reason is one of these, never empty.
  const bool known = info.why_not.find("libcuda.so.1") != std::string::npos ||
                     info.why_not.find("no CUDA device") != std::string::npos ||
                     info.why_not.find("without the CUDA kernels") != std::string::npos ||
                     info.why_not.find("compute capability") != std::string::npos;
  EXPECT_TRUE(known) << info.why_not;
  EXPECT_EQ(ds4::cuda::compiled_in(), info.why_not.find("without the CUDA kernels") == std::string::npos);
}

}  // namespace
