#pragma once
// Internal: the fatbin nvcc built from kernels/device_kernels.cu, embedded by CMake
// (cmake/CudaKernels.cmake); empty (size 0) in a build without the CUDA kernels.
#include <cstddef>

namespace ds4::cuda::detail {

struct EmbeddedImage {
  const unsigned char* data;
  size_t size;
};
EmbeddedImage embedded_kernels();

}  // namespace ds4::cuda::detail
