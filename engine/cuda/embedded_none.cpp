// A build without the CUDA kernels (-DDS4D_CUDA=OFF): no image, so compiled_in() is false.
#include "engine/cuda/embedded_kernels.hpp"

namespace ds4::cuda::detail {
EmbeddedImage embedded_kernels() { return {nullptr, 0}; }
}  // namespace ds4::cuda::detail
