// `ds4ctl imatrix -m MODEL.gguf --text FILE -o imatrix.dat [--chunk N] [--chunks K]`: collects
// the importance matrix with our engine (toolchain/imatrix) and writes GGML's imatrix file, then a
// coverage report: per routed layer, the fraction of experts that calibration tokens reached
// (an expert no token chose gets neutral importance 1.0). Exit 0 done, 1 error.
#include <fmt/core.h>

#include <fstream>
#include <iterator>
#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/imatrix_file.hpp"
#include "toolchain/imatrix/imatrix_collector.hpp"

namespace {

struct Args {
  std::string model, text, out;
  uint32_t chunk = 512, chunks = 0;
  unsigned threads = 0;
};

int run(const Args& a) {
  try {
    std::ifstream in(a.text, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + a.text);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto r = ds4::imatrix::collect(
        a.model, text, {.chunk_tokens = a.chunk, .max_chunks = a.chunks, .threads = a.threads, .dataset = a.text});
    ds4::convert::write_imatrix(a.out, r.imatrix);
    fmt::print("{}: {} entries ({} routed-expert, {} dense) from {} chunks, {} tokens\n", a.out,
               r.imatrix.entries.size(), r.expert_entries, r.dense_entries, r.chunks, r.tokens);
    uint32_t hit = 0, all = 0;
    fmt::print("coverage (experts reached per routed layer):\n");
    for (const auto& c : r.coverage) {
      fmt::print("  layer {:>3}: {:>4}/{:<4} {:5.1f}%\n", c.layer, c.experts_hit, c.experts,
                 100.0 * c.experts_hit / c.experts);
      hit += c.experts_hit, all += c.experts;
    }
    if (all) fmt::print("  total: {}/{} = {:.1f}%\n", hit, all, 100.0 * hit / all);
    fmt::print("hash {}\n", ds4::convert::file_hash(a.out));
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ds4ctl imatrix: {}\n", e.what());
    return 1;
  }
}

ds4ctl::Register reg{
    "imatrix", "Collect an importance matrix (GGML imatrix.dat) by running calibration text through the engine",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<Args>();
      sub.add_option("-m,--model", a->model, "DS4 GGUF")->required()->check(CLI::ExistingFile);
      sub.add_option("--text", a->text, "calibration text file")->required()->check(CLI::ExistingFile);
      sub.add_option("-o,--output", a->out, "imatrix file to write")->required();
      sub.add_option("--chunk", a->chunk, "tokens per chunk (BOS included)")->check(CLI::Range(2, 1 << 20));
      sub.add_option("--chunks", a->chunks, "at most this many chunks (0: all the text)");
      sub.add_option("--threads", a->threads, "threads (0: all cores)");
      return [a] { return run(*a); };
    }};

}  // namespace
