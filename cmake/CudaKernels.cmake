# The CUDA kernels: nvcc compiles engine/cuda/kernels/device_kernels.cu into one fatbin (cubins
# for sm_90 and sm_121a, PTX for compute_121 so newer GPUs JIT it) and a generated .cpp embeds
# the bytes. Only nvcc is needed at build time: no CUDA language in CMake, no CUDA library
# linked; the host side opens libcuda.so.1 at run time (docs/cuda.md §build).
#
# DS4D_CUDA: ON by default when nvcc is found (DS4D_NVCC, else /usr/local/cuda/bin/nvcc, else PATH).
find_program(DS4D_NVCC nvcc HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
if(DS4D_NVCC)
  set(ds4_cuda_default ON)
else()
  set(ds4_cuda_default OFF)
endif()
option(DS4D_CUDA "Build the CUDA kernels (needs nvcc at build time, nothing CUDA at run time)" ${ds4_cuda_default})
set(DS4D_CUDA_GENCODE
    "-gencode=arch=compute_90,code=sm_90;-gencode=arch=compute_121a,code=sm_121a;-gencode=arch=compute_121,code=compute_121"
    CACHE STRING "nvcc -gencode flags of the embedded fatbin")
if(DS4D_CUDA AND NOT DS4D_NVCC)
  message(FATAL_ERROR "DS4D_CUDA=ON but no nvcc found: set DS4D_NVCC or pass -DDS4D_CUDA=OFF")
endif()
message(STATUS "ds4d: CUDA kernels ${DS4D_CUDA} (nvcc: ${DS4D_NVCC})")

# ds4_cuda_embed_kernels(<out_cpp> <cu_source> <depends...>): the rule that writes <out_cpp>
# defining ds4::cuda::detail::embedded_kernels() over the fatbin of <cu_source>.
function(ds4_cuda_embed_kernels out_cpp cu_source)
  set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/device_kernels.fatbin)
  set(host_cxx_flag)
  # nvcc preprocesses with a host compiler of its own architecture: a cross compiler (the arm64
  # build) would be refused, and the device code does not depend on it.
  if(CMAKE_CXX_COMPILER AND NOT CMAKE_CROSSCOMPILING)
    set(host_cxx_flag -ccbin=${CMAKE_CXX_COMPILER})
  endif()
  # --fmad=false: nvcc must never contract a*b+c (the kernels use _rn intrinsics anyway).
  add_custom_command(
    OUTPUT ${fatbin}
    COMMAND ${DS4D_NVCC} ${host_cxx_flag} -std=c++20 -O3 --fmad=false --fatbin ${DS4D_CUDA_GENCODE}
            -I${CMAKE_SOURCE_DIR} -o ${fatbin} ${cu_source}
    DEPENDS ${cu_source} ${ARGN}
    COMMENT "nvcc: ${cu_source} -> fatbin (${DS4D_CUDA_GENCODE})"
    VERBATIM)
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DIN=${fatbin} -DOUT=${out_cpp} -P ${CMAKE_SOURCE_DIR}/cmake/EmbedBinary.cmake
    DEPENDS ${fatbin} ${CMAKE_SOURCE_DIR}/cmake/EmbedBinary.cmake
    COMMENT "embedding the CUDA fatbin"
    VERBATIM)
endfunction()
