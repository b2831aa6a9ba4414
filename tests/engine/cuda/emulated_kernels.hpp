#pragma once
// Every kernel of engine/cuda/kernels/device_kernels.cu compiled for the CUDA-thread emulator, by
// its C name, with a caller that unpacks cuLaunchKernel's argument array into the kernel's
// parameter types (the table is generated from the preprocessed kernel sources at build time).

#include <functional>

namespace ds4::cuda::emu {

struct EmulatedKernel {
  const char* name;
  void (*call)(void** args);  // args: one pointer per parameter, as for cuLaunchKernel
  // The kernel with a copy of its arguments, to run later: what a graph's kernel node holds (the
  // driver copies the parameters when the launch is captured).
  std::function<void()> (*bind)(void** args);
};

// The kernel named `name`, or null when device_kernels.cu has none.
const EmulatedKernel* find_kernel(const char* name);

}  // namespace ds4::cuda::emu
