#pragma once
// DS4_DYNAMIC_SHARED(T, name): the kernel's dynamic shared memory (the launch's byte count) as
// an array `name` of T. Under nvcc it is `extern __shared__ T name[]`; a host compiler gets the
// buffer of the CUDA-thread emulator the tests run the kernels in
// (tests/engine/cuda/cuda_emulator.hpp, which declares ds4_emulated_dynamic_shared).
#if defined(__CUDACC__)
#define DS4_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#else
#define DS4_DYNAMIC_SHARED(T, name) T* const name = static_cast<T*>(ds4_emulated_dynamic_shared())
#endif
