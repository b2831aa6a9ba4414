// Kernel throughput: weight bytes per second through the decode matmul (one activation row,
// 4096 columns) for every weight format, in cache (512 KiB, compute bound) and streamed from
// memory (256 MiB), next to the machine's streaming read bandwidth measured in the same run.
// Counters: GB/s = weight bytes/s / 1e9; x_read_bw = that rate / read bandwidth (1.0 means the
// kernel keeps up with memory, so decode is bandwidth bound).
//   kernels_bench [--threads N] [google benchmark flags, e.g. --benchmark_min_time=0.2]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/kernel_bench.hpp"
#include "engine/kernels/matmul.hpp"

namespace {

using ds4::kernels::BenchMatrix;
using ds4::kernels::ThreadPool;
using ds4::quant::Isa;
using ds4::quant::Type;

double g_read_gbs = 0;

void bm_matmul(benchmark::State& state, ThreadPool* pool, Type type, size_t bytes, Isa isa) {
  const BenchMatrix m = ds4::kernels::make_bench_matrix(type, bytes);
  std::vector<float> out(static_cast<size_t>(m.view.rows));
  for (auto _ : state) {
    ds4::kernels::matmul(*pool, m.view, m.act.data(), m.act.size(), 1, out.data(), isa);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double total = static_cast<double>(m.weights.size()) * static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
  state.counters["x_read_bw"] = benchmark::Counter(total / (g_read_gbs * 1e9), benchmark::Counter::kIsRate);
}

void bm_read(benchmark::State& state) {
  for (auto _ : state) state.PauseTiming(), state.ResumeTiming();
  state.counters["GB/s"] = g_read_gbs;
  state.counters["x_read_bw"] = 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned threads = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; i++) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = static_cast<unsigned>(std::atoi(argv[++i]));
    else
      args.push_back(argv[i]);
  }
  int n_args = static_cast<int>(args.size());
  static ThreadPool pool(threads);
  g_read_gbs = ds4::kernels::measure_read_bandwidth_gbs(pool);
  double load1 = -1;  // other processes skew every rate below; say so next to the numbers
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load1) != 1) load1 = -1;
    std::fclose(f);
  }
  std::printf("threads %u, isa %s, streaming read bandwidth %.2f GB/s, load average %.2f\n", pool.size(),
              ds4::quant::isa_name(ds4::quant::best_isa()), g_read_gbs, load1);
  benchmark::RegisterBenchmark("read_bandwidth", bm_read)->Iterations(1);
  const Isa best = ds4::quant::best_isa();
  for (Type t : {Type::IQ2_XXS, Type::Q2_K, Type::Q4_K, Type::Q8_0, Type::MXFP4, Type::F16, Type::BF16, Type::F32}) {
    const std::string name(ds4::quant::type_info(t).name);
    if (best == Isa::Avx2) {
      benchmark::RegisterBenchmark(("matmul/" + name + "/cache/avx2").c_str(), bm_matmul, &pool, t,
                                   ds4::kernels::kBenchCacheBytes, Isa::Avx2)->UseRealTime();
      benchmark::RegisterBenchmark(("matmul/" + name + "/stream/avx2").c_str(), bm_matmul, &pool, t,
                                   ds4::kernels::kBenchStreamBytes, Isa::Avx2)->UseRealTime();
      if (ds4::quant::traits(t).dot_avx2_exact != ds4::quant::traits(t).dot_avx2)  // exact-mode float kernels
        benchmark::RegisterBenchmark(("matmul/" + name + "/stream/avx2-exact").c_str(), bm_matmul, &pool, t,
                                     ds4::kernels::kBenchStreamBytes, Isa::Avx2Exact)->UseRealTime();
    }
    benchmark::RegisterBenchmark(("matmul/" + name + "/stream/scalar").c_str(), bm_matmul, &pool, t,
                                 ds4::kernels::kBenchStreamBytes, Isa::Scalar)->UseRealTime();
  }
  benchmark::Initialize(&n_args, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
