// libFuzzer target for the GGUF reader. The claim under test: no byte string makes
// GgufFile::from_memory (or the accessors of a file it accepted) read out of bounds, overflow,
// allocate without limit, or throw anything but GgufError. Built with clang
// -fsanitize=fuzzer,address,undefined by the ds4_fuzzers target; ASan turns any stray read into a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ds4::gguf;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    GgufFile f = GgufFile::from_memory(bytes, "fuzz");
    // Touch the first and last byte of every tensor: ASan reports any pointer outside the input.
    volatile std::byte sink{};
    for (const TensorInfo& t : f.tensors()) {
      std::span<const std::byte> b = f.bytes(t);
      sink = b.front();
      sink = b.back();
      if (f.find_tensor(t.name) != &t) std::abort();
    }
    // Every accessor on every key either converts or throws GgufError.
    for (const KeyValue& kv : f.metadata()) {
      try {
        (void)f.get<uint32_t>(kv.key);
      } catch (const GgufError&) {
      }
      try {
        (void)f.get<int64_t>(kv.key);
      } catch (const GgufError&) {
      }
      try {
        (void)f.get<float>(kv.key);
      } catch (const GgufError&) {
      }
      try {
        (void)f.get<std::string>(kv.key);
      } catch (const GgufError&) {
      }
      try {
        (void)f.get_array<uint32_t>(kv.key);
      } catch (const GgufError&) {
      }
      try {
        (void)f.get_array<std::string>(kv.key);
      } catch (const GgufError&) {
      }
    }
    // The DS4 catalogue check must also cope with any accepted file.
    (void)check_ds4_layout(f);
    // Whatever was accepted can be written back and reads back identically.
    if (f.tensors().size() < 64 && size < (1u << 20)) {
      GgufWriter w = GgufWriter::copy_of(f);
      std::vector<std::byte> again = w.write_to_memory();
      GgufFile g = GgufFile::from_memory(again, "fuzz-rewrite");
      if (g.metadata().size() != f.metadata().size() || g.tensors().size() != f.tensors().size()) std::abort();
    }
  } catch (const GgufError&) {
  }
  return 0;
}
