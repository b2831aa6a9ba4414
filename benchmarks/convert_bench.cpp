// Conversion throughput, measured side by side in one run (run under `nice -n 10`): quantizer
// rates per type and per core, source decode rates, an end-to-end conversion on 1 and 2 threads,
// and the projected time of the full 284B checkpoint. Usage: convert_bench [CHECKPOINT_DIR]
// [--disk-gbps X]. What each part measures: docs/benchmarks.md §conversion-benchmark.
#include <fmt/core.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/convert/official_formats.hpp"

namespace {

using ds4::quant::Type;

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Rate {
  double per_core = 0, wall = 0;  // elements (or bytes) per second
};

// Runs fn(row) over `rows` rows split across `threads` threads; returns per-core and wall rates
// in units of `per_row` per second.
template <class Fn>
Rate measure(unsigned threads, uint64_t rows, double per_row, Fn fn) {
  std::atomic<uint64_t> next{0};
  std::vector<double> cpu(threads);
  const double w0 = wall_s();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const double c0 = thread_cpu_s();
      for (uint64_t r; (r = next.fetch_add(1)) < rows;) fn(t, r);
      cpu[t] = thread_cpu_s() - c0;
    });
  for (auto& th : pool) th.join();
  const double wall = wall_s() - w0;
  double cpu_sum = 0;
  for (double c : cpu) cpu_sum += c;
  return {rows * per_row / cpu_sum, rows * per_row / wall};
}

}  // namespace

int main(int argc, char** argv) {
  std::string ckpt;
  double disk_gbps = 2.0;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--disk-gbps" && i + 1 < argc) disk_gbps = std::atof(argv[++i]);
    else ckpt = argv[i];
  }
  constexpr uint64_t kCols = 4096;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  const uint64_t pool_rows = 64;
  std::vector<float> src(pool_rows * kCols);
  for (float& x : src) x = nd(rng);

  fmt::print("1. quantization, 4096-wide rows (weights/s; per core = CPU time of each thread)\n");
  fmt::print("{:<9} {:>14} {:>14} {:>14} {:>9} {:>16} {:>8}\n", "type", "1 thr /core", "2 thr /core", "2 thr wall",
             "scaling", "imatrix 1 thr", "ratio");
  // A skewed importance vector, as an imatrix row looks (a few hot columns).
  std::vector<float> importance(kCols);
  for (uint64_t c = 0; c < kCols; ++c) importance[c] = c % 61 == 7 ? 200.0f : 0.5f + float(c % 5) * 0.25f;
  std::map<Type, Rate> one, two, weighted;
  for (Type t : {Type::IQ2_XXS, Type::Q2_K, Type::Q4_K, Type::Q8_0, Type::MXFP4, Type::F16}) {
    const uint64_t rows = t == Type::IQ2_XXS ? 48 : 2048;
    const uint64_t rb = ds4::quant::row_bytes(t, kCols);
    std::vector<std::vector<uint8_t>> out(2, std::vector<uint8_t>(rb));
    const auto& tr = ds4::quant::traits(t);
    auto fn = [&](unsigned th, uint64_t r) {
      tr.quantize(src.data() + (r % pool_rows) * kCols, out[th].data(), kCols);
    };
    one[t] = measure(1, rows, double(kCols), fn);
    two[t] = measure(2, rows, double(kCols), fn);
    std::string wcol = "-", wratio = "";
    if (tr.quantize_weighted) {
      weighted[t] = measure(1, rows, double(kCols), [&](unsigned th, uint64_t r) {
        tr.quantize_weighted(src.data() + (r % pool_rows) * kCols, out[th].data(), kCols, importance.data());
      });
      wcol = fmt::format("{:.3g}/s", weighted[t].per_core);
      wratio = fmt::format("{:.2f}x", weighted[t].per_core / one[t].per_core);
    }
    fmt::print("{:<9} {:>12.3g}/s {:>12.3g}/s {:>12.3g}/s {:>8.2f}x {:>16} {:>8}\n", ds4::quant::type_info(t).name,
               one[t].per_core, two[t].per_core, two[t].wall, two[t].wall / one[t].wall, wcol, wratio);
  }

  fmt::print("\n2. source decoding (source GB/s, 1 thread, per core)\n");
  {
    const uint64_t rows = 128;
    std::vector<uint8_t> fp8(rows * kCols), s8((rows / 128) * (kCols / 128)), fp4(rows * kCols / 2),
        s4(rows * kCols / 32);
    ds4::convert::encode_fp8(src.data(), pool_rows, kCols, fp8.data(), s8.data());
    ds4::convert::encode_fp4(src.data(), pool_rows, kCols, fp4.data(), s4.data());
    std::vector<float> outf(kCols);
    std::vector<uint16_t> bf(kCols);
    const Rate r8 = measure(1, 4096, double(kCols + 1), [&](unsigned, uint64_t r) {
      ds4::convert::decode_fp8_rows(fp8.data(), s8.data(), kCols, r % 64, 1, outf.data());
    });
    const Rate r4 = measure(1, 8192, double(kCols / 2 + kCols / 32), [&](unsigned, uint64_t r) {
      ds4::convert::decode_fp4_rows(fp4.data(), s4.data(), kCols, r % 64, 1, outf.data());
    });
    const Rate rb = measure(1, 8192, double(kCols * 2), [&](unsigned, uint64_t) {
      ds4::quant::traits(Type::BF16).dequantize(bf.data(), outf.data(), kCols);
    });
    std::vector<uint8_t> mx(ds4::quant::row_bytes(Type::MXFP4, kCols));
    const Rate rr = measure(1, 8192, double(kCols / 2 + kCols / 32), [&](unsigned, uint64_t r) {
      ds4::convert::repack_fp4_row_to_mxfp4(fp4.data() + (r % 64) * kCols / 2, s4.data() + (r % 64) * kCols / 32, kCols,
                                            mx.data());
    });
    fmt::print(
        "FP8+scale decode {:.2f} GB/s, FP4+scale decode {:.2f} GB/s, BF16 decode {:.2f} GB/s, FP4->MXFP4 repack {:.2f} "
        "GB/s\n",
        r8.per_core / 1e9, r4.per_core / 1e9, rb.per_core / 1e9, rr.per_core / 1e9);
  }

  if (!ckpt.empty()) {
    fmt::print("\n3. end to end on {}\n", ckpt);
    for (const char* recipe : {"mxfp4", "q2"})
      for (unsigned th : {1u, 2u}) {
        ds4::convert::ConvertOptions o;
        o.source_dir = ckpt;
        o.output = (std::filesystem::temp_directory_path() / "convert_bench_out.gguf").string();
        o.recipe = recipe;
        o.threads = th;
        const auto r = ds4::convert::convert_checkpoint(o);
        fmt::print("{:<6} {} thr: {:.1f} MiB source in {:.2f} s = {:.4f} GB/s, peak RSS {:.1f} MiB\n", recipe, th,
                   r.source_bytes / 1048576.0, r.seconds, r.source_bytes / r.seconds / 1e9,
                   r.peak_rss_bytes / 1048576.0);
        std::filesystem::remove(o.output);
      }
  }

  // 4. Full checkpoint under the q2 recipe.
  ds4::gguf::Ds4Dims d;
  d.n_layer = 43, d.n_embd = 4096, d.n_vocab = 129280, d.n_head = 64, d.n_head_kv = 1, d.head_dim = d.value_dim = 512;
  d.rope_dim = 64, d.q_lora_rank = 1024, d.out_lora_rank = 1024, d.out_groups = 8, d.n_expert = 256,
  d.n_expert_used = 6;
  d.n_expert_shared = 1, d.expert_ff = 2048, d.n_hash_layer = 3, d.sliding_window = 128, d.indexer_heads = 64;
  d.indexer_dim = 128, d.indexer_top_k = 512, d.hc_count = 4, d.hc_sinkhorn_iters = 20;
  d.compress_ratios.assign(43, 0);
  for (uint32_t i = 2; i < 43; ++i) d.compress_ratios[i] = i % 2 == 0 ? 4 : 128;
  std::map<Type, double> elems;
  double source_bytes = 0;
  for (const auto& rule : ds4::gguf::ds4_tensor_catalogue(d)) {
    double n = 1;
    for (uint64_t x : rule.dims) n *= double(x);
    const Type t = rule.allowed.front();  // the q2 recipe
    elems[t] += n;
    source_bytes += rule.family == ds4::gguf::Family::RoutedExperts ? n / 2 + n / 32
                    : t == Type::Q8_0                               ? n * (1 + 1.0 / 16384)
                    : t == Type::F32 || t == Type::I32              ? n * 4
                                                                    : n * 2;
  }
  // with_imatrix: the weighted types at their weighted rate (scaled by the plain 1->2 thread ratio).
  auto project = [&](unsigned cores, bool measured_two, bool with_imatrix = false) {
    double s = 0;
    for (const auto& [t, n] : elems) {
      if (!one.count(t)) continue;                                          // F32 / I32: copies
      const double eff = std::min(1.0, two[t].per_core / one[t].per_core);  // per-core rate kept at 2 threads
      double rate = measured_two && cores == 2 ? two[t].per_core * 2 : one[t].per_core * eff * cores;
      if (with_imatrix && weighted.count(t)) rate *= weighted[t].per_core / one[t].per_core;
      s += n / rate;
    }
    return s;
  };
  double total_w = 0;
  for (const auto& [t, n] : elems) total_w += n;
  fmt::print("\n4. projection, full checkpoint (q2 recipe): {:.3g} weights, {:.0f} GB of source\n", total_w,
             source_bytes / 1e9);
  for (const auto& [t, n] : elems) fmt::print("   {:<8} {:.3g} weights\n", ds4::quant::type_info(t).name, n);
  const double io = source_bytes / (disk_gbps * 1e9);
  for (unsigned cores : {1u, 2u, 20u}) {
    const double cpu = project(cores, true);
    const double cpu_im = project(cores, true, true);
    fmt::print(
        "{:>2} cores: compute {:.1f} h ({:.1f} h with --imatrix), reading the source at {:.1f} GB/s {:.2f} h -> "
        "~{:.1f} "
        "h\n",
        cores, cpu / 3600, cpu_im / 3600, disk_gbps, io / 3600, std::max(cpu, io) / 3600);
  }
  return 0;
}
