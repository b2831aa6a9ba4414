// main() of cuda_emulated_gpu_tests: the GPU test sources (the *_gpu_test.cpp of cuda_gpu_tests)
// with the emulator installed as the CUDA driver before any test asks for the device, so every
// launcher and kernel they exercise runs on this machine (docs/cuda.md §emulated-driver).
#include <gtest/gtest.h>

#include "tests/engine/cuda/emulated_driver.hpp"

int main(int argc, char** argv) {
  ds4::cuda::emu::install_driver();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
