// ds4-cuda-check: what scripts/gpu-check.sh runs on a GPU machine. Prints the device, compares
// the matvec kernels with the CPU bit for bit (every width, every shape of matvec_compare), then
// measures in one run: the device's copy bandwidth (a grid-stride 16-byte copy, read + write
// bytes) and each matvec kernel's weight bytes per second on a matrix far larger than L2, and
// prints each as a ratio of the copy bandwidth; then the prefill GEMM (engine/cuda/gemm.hpp)
// bit for bit against the CPU and the matvec, the int8 mma.sync peak (kernels/mma_peak.cuh) and
// the GEMM's int8 throughput as a share of it; last, what a pass of small kernels costs the host
// launched one by one and as a CUDA graph. Exit status: 0 all identical, 1 a mismatch, 2 no
// usable device (the reason printed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/device.hpp"
#include "engine/cuda/gemm.hpp"
#include "engine/cuda/matvec.hpp"
#include "engine/cuda/pass_graph.hpp"
#include "engine/quant/quant.hpp"
#include "tools/cuda_check/gemm_compare.hpp"
#include "tools/cuda_check/matvec_compare.hpp"

namespace {
using ds4::quant::Type;
constexpr double kGB = 1e9;
// Every weight format with a device kernel (engine/cuda/matvec.hpp).
constexpr Type kFormats[] = {Type::Q8_0,  Type::F16,  Type::BF16, Type::F32,
                             Type::MXFP4, Type::Q2_K, Type::Q4_K, Type::IQ2_XXS};

double copy_bandwidth_gbs(ds4::cuda::Device& dev, size_t bytes) {
  ds4::cuda::DeviceBuffer a(bytes), b(bytes);
  uint64_t src = a.ptr(), dst = b.ptr(), n = bytes / 16;
  void* args[] = {&src, &dst, &n};
  const unsigned grid = static_cast<unsigned>(dev.info().sm_count) * 8;
  dev.launch("ds4_stream_copy", grid, 512, 0, args);  // warm up
  const int reps = 10;
  const float ms = dev.time_ms([&] {
    for (int i = 0; i < reps; i++) dev.launch("ds4_stream_copy", grid, 512, 0, args);
  });
  return 2.0 * static_cast<double>(bytes) * reps / (ms * 1e-3) / kGB;
}

// A device matrix of about `bytes` of `type`, filled by repeating a random host chunk of at most
// 2^20 weights (the values do not change the time; IQ2_XXS's quantizer takes about 3 s per 2^20).
ds4::cuda::DeviceWeight big_weight(Type type, int64_t cols, size_t bytes) {
  const size_t rb = ds4::quant::row_bytes(type, static_cast<uint64_t>(cols));
  const int64_t rows = static_cast<int64_t>(bytes / rb);
  std::vector<uint8_t> chunk_w;
  {
    const int64_t chunk_rows = std::min<int64_t>(rows, std::max<int64_t>(1, (int64_t{1} << 20) / cols));
    std::vector<float> row(cols);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    chunk_w.resize(rb * chunk_rows);
    for (int64_t r = 0; r < chunk_rows; r++) {
      for (auto& v : row) v = nd(rng);
      ds4::quant::quantize_row(type, row.data(), chunk_w.data() + r * rb, cols, nullptr);
    }
  }
  ds4::cuda::DeviceWeight w{type, rows, cols, {}, ds4::cuda::DeviceBuffer(rb * rows)};
  for (size_t off = 0; off < w.owned.bytes(); off += chunk_w.size())
    w.owned.upload(chunk_w.data(), std::min(chunk_w.size(), w.owned.bytes() - off), off);
  w.data = w.owned;
  return w;
}

// Weight bytes per second of the matvec kernel on `w` at `width`.
double matvec_gbs(ds4::cuda::Device& dev, const ds4::cuda::DeviceWeight& w, int width) {
  const Type vdt = ds4::quant::traits(w.type).vec_dot_type;
  const size_t arb = ds4::quant::act_row_bytes(vdt, w.cols);
  std::vector<uint8_t> act(arb * width);
  std::vector<float> x(w.cols, 0.5f);
  for (int t = 0; t < width; t++) ds4::quant::quantize_activation(vdt, x.data(), act.data() + t * arb, w.cols);
  ds4::cuda::DeviceBuffer dact(act.size()), out(sizeof(float) * width * w.rows);
  dact.upload(act.data(), act.size());
  ds4::cuda::matvec(w, dact, arb, width, out);  // warm up
  const int reps = 5;
  const float ms = dev.time_ms([&] {
    for (int i = 0; i < reps; i++) ds4::cuda::matvec(w, dact, arb, width, out);
  });
  return static_cast<double>(w.data.bytes()) * reps / (ms * 1e-3) / kGB;
}

// The int8 mma.sync rate in operations (2 per multiply-add) per second: 4 thread blocks of 8
// warps per SM, each warp kMmaPeakChains (8) independent mma per iteration.
double mma_peak_tops(ds4::cuda::Device& dev) {
  const unsigned grid = static_cast<unsigned>(dev.info().sm_count) * 4, block = 256;
  ds4::cuda::DeviceBuffer sink(sizeof(int32_t) * grid * block);
  uint64_t out = sink.ptr();
  int64_t iters = 256;
  void* args[] = {&iters, &out};
  dev.launch("ds4_mma_peak", grid, block, 0, args);  // warm up
  iters = 1 << 16;
  const float ms = dev.time_ms([&] { dev.launch("ds4_mma_peak", grid, block, 0, args); });
  const double mmas = static_cast<double>(grid) * (block / 32) * static_cast<double>(iters) * 8;
  return mmas * (2.0 * 16 * 8 * 32) / (ms * 1e-3) / 1e12;
}

// The GEMM's int8 operations per second (2·rows·cols·n) on w (a format with a tensor-core kernel)
// and n activation rows.
double gemm_tops(ds4::cuda::Device& dev, const ds4::cuda::DeviceWeight& w, int n) {
  const int64_t cols = w.cols;
  const Type vdt = ds4::quant::traits(w.type).vec_dot_type;
  const size_t arb = ds4::quant::act_row_bytes(vdt, cols);
  std::vector<uint8_t> act(arb * n);
  std::vector<float> x(cols);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int t = 0; t < n; t++) {
    for (auto& v : x) v = nd(rng);
    ds4::quant::quantize_activation(vdt, x.data(), act.data() + t * arb, cols);
  }
  ds4::cuda::DeviceBuffer dact(act.size()), out(sizeof(float) * n * w.rows);
  dact.upload(act.data(), act.size());
  ds4::cuda::gemm(w, dact, arb, n, out);  // warm up
  const int reps = 10;
  const float ms = dev.time_ms([&] {
    for (int i = 0; i < reps; i++) ds4::cuda::gemm(w, dact, arb, n, out);
  });
  return 2.0 * static_cast<double>(w.rows) * cols * n * reps / (ms * 1e-3) / 1e12;
}

// The GEMM's bits (every quantized format on tensor cores, F16 through the matvec fallback) and
// its throughput.
bool check_gemm(ds4::cuda::Device& dev) {
  bool identical = true;
  uint32_t seed = 11;
  for (Type type : {Type::Q8_0, Type::MXFP4, Type::Q4_K, Type::Q2_K, Type::IQ2_XXS, Type::F16})
    for (const auto& s : ds4::cuda_check::kGemmShapes) {
      // The GoogleTest suite takes every shape; here the CPU side (quantizer, reference dots)
      // of the 1030 x 4096 one would cost seconds per format against gpu-check's budget.
      if (s.rows * s.cols > (int64_t{1} << 20)) continue;
      const int64_t cols = ds4::cuda_check::shape_cols(type, {s.rows, s.cols, false});
      const auto r = ds4::cuda_check::compare_gemm(type, s.rows, cols, s.n, seed++);
      std::printf("bits gemm %-5s %5lldx%-5lld n %3d: %llu outputs, %llu differ from the CPU, %llu from matvec %s%s\n",
                  std::string(ds4::quant::type_info(type).name).c_str(), static_cast<long long>(s.rows),
                  static_cast<long long>(cols), s.n, static_cast<unsigned long long>(r.cpu.compared),
                  static_cast<unsigned long long>(r.cpu.mismatched),
                  static_cast<unsigned long long>(r.matvec.mismatched), r.cpu.first_mismatch.c_str(),
                  r.matvec.first_mismatch.c_str());
      identical = identical && r.cpu.mismatched == 0 && r.matvec.mismatched == 0;
    }
  const double peak = mma_peak_tops(dev);
  std::printf("int8 mma.sync peak: %.0f TOPS (m16n8k32, registers only)\n", peak);
  for (Type type : {Type::Q8_0, Type::MXFP4, Type::Q4_K, Type::Q2_K, Type::IQ2_XXS})
    for (const int64_t rows : {int64_t{4096}, int64_t{32768}}) {
      const ds4::cuda::DeviceWeight w = big_weight(type, 4096, ds4::quant::row_bytes(type, 4096) * rows);
      for (const int n : {16, 64, 128, 512}) {
        const double tops = gemm_tops(dev, w, n);
        std::printf("gemm %-7s %5lldx4096, n %3d: %.1f TOPS = %.3f of the int8 mma peak\n",
                    std::string(ds4::quant::type_info(type).name).c_str(), static_cast<long long>(rows), n, tops,
                    tops / peak);
      }
    }
  return identical;
}

// A decode-sized pass of tiny kernels (2000 copies of 256 bytes), launched one by one and as one
// CUDA graph captured, updated and launched each time as the device forward does
// (docs/cuda.md §graphs): wall-clock microseconds per kernel until the device is done, after a
// warm-up.
void launch_overhead(ds4::cuda::Device& dev) {
  constexpr int kKernels = 2000, kReps = 10;
  ds4::cuda::DeviceBuffer a(4096), b(4096);
  uint64_t src = a.ptr(), dst = b.ptr(), n = 16;
  void* args[] = {&src, &dst, &n};
  const auto pass = [&] {
    for (int i = 0; i < kKernels; i++) dev.launch("ds4_stream_copy", 1, 32, 0, args);
  };
  const auto per_kernel_us = [&](const auto& run_pass) {
    run_pass();
    dev.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < kReps; r++) run_pass();
    dev.synchronize();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
           (kReps * kKernels);
  };
  const double plain = per_kernel_us(pass);
  ds4::cuda::PassGraph graph;
  const double graphed = per_kernel_us([&] { graph.run(pass); });
  std::printf("launches: %d small kernels, %.2f us each one by one, %.2f us each as a CUDA graph: %.2fx\n", kKernels,
              plain, graphed, plain / graphed);
}

int run() {
  const ds4::cuda::DeviceInfo info = ds4::cuda::probe();
  if (!info.usable) {
    std::printf("no usable CUDA device: %s\n", info.why_not.c_str());
    return 2;
  }
  std::printf("device: %s, compute capability %d.%d, %d SMs, %.1f GiB, L2 %.1f MiB, driver %d\n", info.name.c_str(),
              info.cc_major, info.cc_minor, info.sm_count, static_cast<double>(info.total_memory) / (1u << 30),
              static_cast<double>(info.l2_bytes) / (1u << 20), info.driver_version);
  ds4::cuda::Device& dev = ds4::cuda::Device::open();

  bool identical = true;
  uint32_t seed = 1;
  for (Type type : kFormats)
    for (const auto& s : ds4::cuda_check::kShapes) {
      const int64_t cols = ds4::cuda_check::shape_cols(type, s);
      const auto r = ds4::cuda_check::compare_matvec(type, s.rows, cols, s.special, seed++);
      std::printf("bits %-7s %5lldx%-5lld widths 1..8: %llu outputs, %llu differ %s\n",
                  std::string(ds4::quant::type_info(type).name).c_str(), static_cast<long long>(s.rows),
                  static_cast<long long>(cols), static_cast<unsigned long long>(r.compared),
                  static_cast<unsigned long long>(r.mismatched), r.first_mismatch.c_str());
      identical = identical && r.mismatched == 0;
    }

  // "Far larger than L2": 64x the L2 size, at least 2 GiB, at most a quarter of device memory.
  const size_t big = std::min(std::max<size_t>(info.l2_bytes * 64, size_t{2} << 30), info.total_memory / 4);
  const double copy = copy_bandwidth_gbs(dev, big);
  std::printf("copy bandwidth: %.0f GB/s (read+write, %.1f GiB buffers)\n", copy,
              static_cast<double>(big) / (1u << 30));
  for (Type type : kFormats) {
    const ds4::cuda::DeviceWeight w = big_weight(type, 4096, big);
    for (int width : {1, 2, 4, 8}) {
      const double gbs = matvec_gbs(dev, w, width);
      std::printf("matvec %-7s 4096 cols, %.1f GiB, width %d: %.0f GB/s = %.3f of copy bandwidth\n",
                  std::string(ds4::quant::type_info(type).name).c_str(), static_cast<double>(big) / (1u << 30), width,
                  gbs, gbs / copy);
    }
  }
  identical = check_gemm(dev) && identical;
  launch_overhead(dev);
  std::printf("summary: bits %s; copy %.0f GB/s\n", identical ? "IDENTICAL" : "DIFFER", copy);
  return identical ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ds4-cuda-check: %s\n", e.what());
    return 3;
  }
}
