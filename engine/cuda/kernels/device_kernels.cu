// Every kernel of the CUDA backend, compiled by nvcc into one fatbin that CMake embeds in the
// binary (one nvcc run keeps the build short). Kernels have C names so the host side finds them
// with cuModuleGetFunction.
#include "engine/cuda/kernels/act_quant.cuh"
#include "engine/cuda/kernels/attention.cuh"
#include "engine/cuda/kernels/compressor.cuh"
#include "engine/cuda/kernels/elementwise.cuh"
#include "engine/cuda/kernels/embed.cuh"
#include "engine/cuda/kernels/grouped_output.cuh"
#include "engine/cuda/kernels/hyper_connection.cuh"
#include "engine/cuda/kernels/indexer.cuh"
#include "engine/cuda/kernels/kv_format.cuh"
#include "engine/cuda/kernels/matvec.cuh"
#include "engine/cuda/kernels/matvec_blocks.cuh"
#include "engine/cuda/kernels/moe.cuh"
#include "engine/cuda/kernels/rms_norm.cuh"
#include "engine/cuda/kernels/rope.cuh"
#include "engine/cuda/kernels/stream_copy.cuh"
