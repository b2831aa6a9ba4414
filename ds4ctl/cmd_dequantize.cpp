// `ds4ctl dequantize -i MODEL.gguf -o F32.gguf`: writes every tensor of a GGUF decoded to F32
// (I32 tensors, the hash routing tables, are copied as they are), metadata unchanged. This is the
// inverse direction of `ds4ctl quantize`: a reference implementation (tools/tinyagent) reads the
// exact weights the engine computes with, and a training run can continue from a shipped model
// whose float checkpoint is gone. Each row goes through the type's own decoder
// (quant::traits(type).dequantize), so the values are bit-identical to what the engine sees.
#include <fmt/core.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "ds4ctl/command_registry.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/quant/quant.hpp"

namespace {

using ds4::quant::Type;

struct DequantizeArgs {
  std::string in, out;
};

int run_dequantize(const DequantizeArgs& a) {
  using namespace ds4::gguf;
  std::error_code ec;
  if (std::filesystem::equivalent(a.in, a.out, ec))
    throw std::runtime_error(a.out + ": output would overwrite the input");
  const GgufFile in = GgufFile::open(a.in);
  GgufWriter w;
  for (const KeyValue& kv : in.metadata()) w.set(kv.key, kv.value);
  uint64_t decoded = 0;
  for (const TensorInfo& t : in.tensors()) {
    if (t.type == Type::I32 || t.type == Type::F32) {
      w.add_tensor(t.name, t.type, t.dims, in.bytes(t));
      continue;
    }
    const auto& traits = ds4::quant::traits(t.type);
    if (!traits.dequantize)
      throw std::runtime_error(a.in + ": tensor " + t.name + " has type " +
                               std::string(ds4::quant::type_info(t.type).name) + ", which has no decoder");
    // The data is decoded while the file is written (the input stays mapped until then).
    w.add_tensor(t.name, Type::F32, t.dims, [&in, &t, &traits](std::span<std::byte> dst) {
      const uint64_t ne0 = t.dims[0], rb = t.row_bytes();
      float* f = reinterpret_cast<float*>(dst.data());
      for (uint64_t r = 0; r < t.rows(); ++r) traits.dequantize(in.data(t) + r * rb, f + r * ne0, int64_t(ne0));
    });
    ++decoded;
  }
  w.write(a.out);
  fmt::print("{}: {} tensors ({} decoded to F32), {} bytes\n", a.out, in.tensors().size(), decoded, w.file_size());
  return 0;
}

ds4ctl::Register reg{"dequantize", "Decode every tensor of a GGUF to F32 (I32 kept)",
                     [](CLI::App& sub) -> ds4ctl::RunFn {
                       auto a = std::make_shared<DequantizeArgs>();
                       sub.add_option("-i,--input", a->in, "input GGUF")->required()->check(CLI::ExistingFile);
                       sub.add_option("-o,--output", a->out, "output GGUF with F32 tensors")->required();
                       return [a] { return run_dequantize(*a); };
                     }};

}  // namespace
