// Kernel throughput: weight bytes per second through the decode matmul (one activation row,
// 4096 columns) for every weight format, in cache (512 KiB, compute bound) and streamed from
// memory (256 MiB), in the Fast order and the Exact one, next to the machine's streaming read
// bandwidth measured in the same run. The F16 order-preserving matvec of Exact mode
// (ordered_simd.hpp) for 1..8 activation rows, one row at a time and through the multi-row kernel
// (the same bits), in cache, side by side; and the F16 matmul of both orders for 8 rows, one call
// per row vs one call for all 8 (the multi-row kernels).
// Counters: GB/s = weight bytes/s / 1e9; x_read_bw = that rate / read bandwidth (1.0 means the
// kernel keeps up with memory, so decode is bandwidth bound).
//   kernels_bench [--threads N | --cpu-time] [google benchmark flags, e.g. --benchmark_min_time=0.2]
// --cpu-time: one thread, every rate (read bandwidth included) per second of that thread's CPU
// time, which stays meaningful on a machine busy with other work; wall-clock otherwise.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "engine/kernels/matmul.hpp"
#include "engine/kernels/ordered_simd.hpp"
#include "engine/kernels/read_stream.hpp"
#include "toolchain/bench/kernel_bench.hpp"

namespace {

using ds4::kernels::BenchMatrix;
using ds4::kernels::ThreadPool;
using ds4::quant::Isa;
using ds4::quant::Type;

double g_read_gbs = 0;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Single-thread streaming read rate per CPU-second (best of three passes over 256 MiB).
double read_bandwidth_cpu_gbs() {
  std::vector<uint8_t> buf(ds4::kernels::kBenchStreamBytes, 1);
  double best = 0;
  uint64_t sink = 0;
  for (int pass = 0; pass < 4; pass++) {
    const double t0 = thread_cpu_seconds();
    sink ^= ds4::kernels::read_stream(buf.data(), buf.size(), ds4::quant::best_isa());
    const double s = thread_cpu_seconds() - t0;
    if (pass > 0) best = std::max(best, static_cast<double>(buf.size()) / s / 1e9);
  }
  benchmark::DoNotOptimize(sink);
  return best;
}

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

// n_act activation rows through a 512 KiB F16 matrix (4096 columns), as linear.cpp's Fast-mode
// F16 matmul runs it on one thread: each row alone, or all through the multi-row kernel.
void bm_f16_ordered(benchmark::State& state, int n_act, bool multi) {
  const BenchMatrix m = ds4::kernels::make_bench_matrix(Type::F16, ds4::kernels::kBenchCacheBytes);
  const auto* w = static_cast<const uint16_t*>(m.view.data);
  const int64_t rows = m.view.rows, cols = m.view.cols;
  std::vector<float> x(static_cast<size_t>(n_act * cols)), out(static_cast<size_t>(n_act * rows));
  for (int t = 0; t < n_act; t++) std::memcpy(x.data() + t * cols, m.act.data(), static_cast<size_t>(cols) * 4);
  for (auto _ : state) {
    if (multi) {
      ds4::kernels::ordered::f16_matvec_rows_multi(w, cols, 0, rows, x.data(), size_t(cols), n_act, out.data(),
                                                   size_t(rows));
    } else {
      for (int t = 0; t < n_act; t++)
        ds4::kernels::ordered::f16_matvec_rows(w, cols, 0, rows, x.data() + t * cols, out.data() + t * rows);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["rows/s"] = benchmark::Counter(static_cast<double>(n_act) * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

// 8 activation rows through matmul on a 512 KiB matrix: one call each, or one call for all.
void bm_matmul_rows8(benchmark::State& state, ThreadPool* pool, Type type, Isa isa, bool together) {
  const BenchMatrix m = ds4::kernels::make_bench_matrix(type, ds4::kernels::kBenchCacheBytes);
  const size_t arb = m.act.size();
  std::vector<uint8_t> act(8 * arb);
  for (size_t t = 0; t < 8; t++) std::memcpy(act.data() + t * arb, m.act.data(), arb);
  std::vector<float> out(static_cast<size_t>(8 * m.view.rows));
  for (auto _ : state) {
    if (together) {
      ds4::kernels::matmul(*pool, m.view, act.data(), arb, 8, out.data(), isa);
    } else {
      for (size_t t = 0; t < 8; t++)
        ds4::kernels::matmul(*pool, m.view, act.data() + t * arb, arb, 1, out.data() + t * size_t(m.view.rows), isa);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["rows/s"] =
      benchmark::Counter(8.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void bm_read(benchmark::State& state) {
  for (auto _ : state) state.PauseTiming(), state.ResumeTiming();
  state.counters["GB/s"] = g_read_gbs;
  state.counters["x_read_bw"] = 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned threads = 0;
  bool cpu_time = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; i++) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--cpu-time") == 0) cpu_time = true;
    else args.push_back(argv[i]);
  }
  if (cpu_time) threads = 1;
  int n_args = static_cast<int>(args.size());
  static ThreadPool pool(threads);
  g_read_gbs = cpu_time ? read_bandwidth_cpu_gbs() : ds4::kernels::measure_read_bandwidth_gbs(pool);
  double load1 = -1;  // other processes skew every rate below; say so next to the numbers
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load1) != 1) load1 = -1;
    std::fclose(f);
  }
  std::printf("threads %u, isa %s, %s, streaming read bandwidth %.2f GB/s, load average %.2f\n", pool.size(),
              ds4::quant::isa_name(ds4::quant::best_isa()), cpu_time ? "per CPU-second" : "wall clock", g_read_gbs,
              load1);
  benchmark::RegisterBenchmark("read_bandwidth", bm_read)->Iterations(1);
  const Isa best = ds4::quant::best_isa();
  auto reg = [&](const std::string& name, Type t, size_t bytes, Isa isa) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name.c_str(), bm_matmul, &pool, t, bytes, isa);
    if (!cpu_time) b->UseRealTime();  // with worker threads only wall time counts all the work
  };
  for (Type t : {Type::IQ2_XXS, Type::Q2_K, Type::Q4_K, Type::Q8_0, Type::MXFP4, Type::F16, Type::BF16, Type::F32}) {
    const std::string name(ds4::quant::type_info(t).name);
    if (best.arch != ds4::quant::Arch::Generic) {
      const Isa exact{best.arch, ds4::quant::Order::Exact};
      const std::string fast_name = ds4::quant::isa_name(best);
      reg("matmul/" + name + "/cache/" + fast_name, t, ds4::kernels::kBenchCacheBytes, best);
      reg("matmul/" + name + "/stream/" + fast_name, t, ds4::kernels::kBenchStreamBytes, best);
      // The Exact order beside the Fast one: what the documented order buys (docs/arithmetic.md).
      reg("matmul/" + name + "/cache/" + ds4::quant::isa_name(exact), t, ds4::kernels::kBenchCacheBytes, exact);
      reg("matmul/" + name + "/stream/" + ds4::quant::isa_name(exact), t, ds4::kernels::kBenchStreamBytes, exact);
    }
    reg("matmul/" + name + "/stream/scalar", t, ds4::kernels::kBenchStreamBytes, Isa::Scalar);
  }
  for (int n : {1, 2, 4, 8})
    for (bool multi : {false, true})
      benchmark::RegisterBenchmark(
          ("f16_ordered/rows" + std::to_string(n) + (multi ? "/multi" : "/one_at_a_time")).c_str(), bm_f16_ordered, n,
          multi);
  if (best.arch != ds4::quant::Arch::Generic) {
    for (Isa isa : {Isa{best.arch, ds4::quant::Order::Exact}, best}) {
      for (bool together : {false, true}) {
        const std::string name = "matmul_rows8/f16/cache/" + std::string(ds4::quant::isa_name(isa)) +
                                 (together ? "/multi" : "/one_at_a_time");
        benchmark::internal::Benchmark* b =
            benchmark::RegisterBenchmark(name.c_str(), bm_matmul_rows8, &pool, Type::F16, isa, together);
        if (!cpu_time) b->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&n_args, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
