// The backend decision on whatever machine runs the test: `cpu` never probes; `auto` takes a
// usable GPU, else the CPU with one line saying why; `cuda` takes the GPU or is refused naming
// what is missing, never silently the CPU. cuda_emulated_gpu_tests runs it with a usable
// (emulated) device, cuda_tests with none.
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

TEST(BackendChoice, AutoTakesAUsableGpuElseTheCpuSayingWhy) {
  const auto d = ds4::cuda::choose_backend(Backend::Automatic);
  const auto info = ds4::cuda::probe();
  if (!info.usable) {
    EXPECT_EQ(d.use, Backend::Cpu);
    EXPECT_NE(d.log_line.find("backend auto: CPU (no CUDA: " + info.why_not), std::string::npos) << d.log_line;
  } else {
    EXPECT_EQ(d.use, Backend::Cuda);
    EXPECT_NE(d.log_line.find("backend auto: CUDA on " + info.name), std::string::npos) << d.log_line;
  }
}

TEST(BackendChoice, CudaRunsOnAUsableGpuElseIsRefusedSayingWhatIsMissing) {
  const auto info = ds4::cuda::probe();
  if (info.usable) {
    const auto d = ds4::cuda::choose_backend(Backend::Cuda);
    EXPECT_EQ(d.use, Backend::Cuda);
    EXPECT_NE(d.log_line.find("backend cuda: CUDA on " + info.name + " (compute capability"), std::string::npos)
        << d.log_line;
    return;
  }
  try {
    ds4::cuda::choose_backend(Backend::Cuda);
    FAIL() << "--backend cuda accepted without a usable GPU";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_FALSE(info.why_not.empty());
    EXPECT_EQ(m, "--backend cuda: no usable CUDA device: " + info.why_not);
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
