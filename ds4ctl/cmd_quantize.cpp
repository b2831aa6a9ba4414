// `ds4ctl quantize -i FLOAT.gguf -o MODEL.gguf [--recipe q2|q4|FILE.toml] [--dequantized F32.gguf]`:
// re-encodes a DS4-layout GGUF whose tensors are F32 (what tools/tinyagent/export.py writes from a
// trained PyTorch model) by a type recipe, with the converter's recipes and row quantizer
// (toolchain/convert: the same code `ds4ctl convert` applies to official checkpoints):
//   q2 (default): routed gate/up IQ2_XXS, routed down Q2_K; attention, shared expert and output
//   Q8_0; embedding, HC, compressor, indexer and router F16; norms and HC scale/base F32;
//   tid2eid I32 as given. q4 makes the routed experts Q4_K and keeps the rest.
// Every tensor must be one the DS4 catalogue (engine/gguf/ds4_layout.hpp) expects for the file's
// own deepseek4.* metadata, with its shape; the output is checked against the catalogue before it
// is written (an MTP sidecar: mtp_catalogue, and --mtp-base MAIN.gguf binds it to its model,
// engine/gguf/sidecar_binding.hpp). --dequantized also writes every tensor decoded back to F32.
#include <fmt/core.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ds4ctl/command_registry.hpp"
#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"
#include "toolchain/convert/recipe.hpp"

namespace {

using ds4::quant::Type;

struct QuantizeArgs {
  std::string in, out, dequantized, mtp_base;
  std::string recipe = "q2";
};

int run_quantize(const QuantizeArgs& a) {
  using namespace ds4::gguf;
  GgufFile in = GgufFile::open(a.in);
  const ds4::convert::Recipe recipe = ds4::convert::load_recipe(a.recipe);
  const Ds4Dims dims = Ds4Dims::from_metadata(in);
  const bool mtp = ds4::convert::is_mtp_sidecar(in);
  const std::string layout = mtp ? "MTP block" : "DS4 layout";
  std::map<std::string, TensorRule> rules;
  for (TensorRule& r : mtp ? ds4::convert::mtp_catalogue(dims) : ds4_tensor_catalogue(dims))
    rules.emplace(r.name, std::move(r));
  if (!mtp && !a.mtp_base.empty())
    throw std::runtime_error(a.in + ": --mtp-base binds an MTP sidecar, and this file is not one (no mtp.0.* tensor, " +
                             "ds4d.convert.role is not mtp)");
  const bool bound =
      in.has(kMtpBaseDigestKey) || (in.has("ds4d.convert.source_fingerprint") && in.has("ds4d.convert.artifact_id"));
  if (mtp && a.mtp_base.empty() && !bound)
    throw std::runtime_error(a.in + ": is an MTP sidecar bound to no base model (no " + kMtpBaseDigestKey +
                             "); give --mtp-base MAIN.gguf, the model it drafts for");

  GgufWriter w, deq;
  for (const KeyValue& kv : in.metadata()) {
    w.set(kv.key, kv.value);
    deq.set(kv.key, kv.value);
  }
  if (mtp) {
    std::string digest;
    if (!a.mtp_base.empty()) {
      const GgufFile base = GgufFile::open(a.mtp_base);
      ds4::convert::check_same_dims(in, base);
      digest = mtp_base_digest(base);
    }
    for (GgufWriter* o : {&w, &deq}) {
      o->set("ds4d.convert.role", std::string("mtp"));
      if (!digest.empty()) o->set(kMtpBaseDigestKey, digest);
    }
  }
  // Encoded tensors stay alive until both files are written.
  auto store = std::make_shared<std::vector<std::vector<std::byte>>>();
  store->reserve(in.tensors().size() * 2);
  std::map<Type, uint64_t> bytes_by_type;
  for (const TensorInfo& t : in.tensors()) {
    auto it = rules.find(t.name);
    if (it == rules.end()) throw std::runtime_error(a.in + ": tensor " + t.name + " is not part of the " + layout);
    const TensorRule& rule = it->second;
    if (t.dims != rule.dims)
      throw std::runtime_error(a.in + ": tensor " + t.name + " has the wrong shape for this file's metadata");
    if (t.type == Type::I32 || rule.allowed.front() == Type::I32) {
      if (t.type != Type::I32) throw std::runtime_error(a.in + ": tensor " + t.name + " must be I32");
      w.add_tensor(t.name, t.type, t.dims, in.bytes(t));
      deq.add_tensor(t.name, t.type, t.dims, in.bytes(t));
      bytes_by_type[Type::I32] += t.n_bytes;
      continue;
    }
    if (t.type != Type::F32)
      throw std::runtime_error(a.in + ": tensor " + t.name + " is " + std::string(ds4::quant::type_info(t.type).name) +
                               "; quantize reads F32 tensors");
    const Type type = ds4::convert::recipe_type_for(recipe, rule);
    const uint64_t n = t.n_elements, ne0 = t.dims[0];
    const float* src = reinterpret_cast<const float*>(in.data(t));
    std::vector<std::byte>& q = store->emplace_back(ds4::convert::quantize_rows(type, src, n / ne0, ne0));
    bytes_by_type[type] += q.size();
    w.add_tensor(t.name, type, t.dims, std::span<const std::byte>(q));
    if (!a.dequantized.empty()) {
      std::vector<std::byte>& f = store->emplace_back(n * sizeof(float));
      const uint64_t rb = ds4::quant::row_bytes(type, ne0);
      for (uint64_t r = 0; r < n / ne0; ++r)
        ds4::quant::traits(type).dequantize(q.data() + r * rb, reinterpret_cast<float*>(f.data()) + r * ne0,
                                            static_cast<int64_t>(ne0));
      deq.add_tensor(t.name, Type::F32, t.dims, std::span<const std::byte>(f));
    }
  }
  w.write(a.out);
  GgufFile check = GgufFile::open(a.out);
  const std::vector<std::string> problems = mtp ? ds4::convert::check_mtp_layout(check) : check_ds4_layout(check);
  if (!problems.empty()) {
    for (const std::string& p : problems) fmt::print(stderr, "{}: {}\n", a.out, p);
    return 1;
  }
  if (!a.dequantized.empty()) deq.write(a.dequantized);
  fmt::print("{}: {} tensors, {} bytes", a.out, in.tensors().size(), check.size());
  for (auto [type, b] : bytes_by_type)
    fmt::print(", {} {:.2f} MiB", ds4::quant::type_info(type).name, b / double(1 << 20));
  fmt::print("\n");
  return 0;
}

ds4ctl::Register reg{
    "quantize", "Encode an F32 DS4 GGUF or MTP sidecar by a type recipe (q2, q4 or a TOML file)",
    [](CLI::App& sub) -> ds4ctl::RunFn {
      auto a = std::make_shared<QuantizeArgs>();
      sub.add_option("-i,--input", a->in, "input GGUF with F32 tensors")->required()->check(CLI::ExistingFile);
      sub.add_option("-o,--output", a->out, "output GGUF")->required();
      sub.add_option("--recipe", a->recipe, "type recipe: q2, q4 or a recipe TOML file")->capture_default_str();
      sub.add_option("--dequantized", a->dequantized,
                     "also write the quantized weights decoded back to F32 to this GGUF");
      sub.add_option("--mtp-base", a->mtp_base,
                     "for an MTP sidecar: the main model it drafts for (writes ds4d.mtp.base_digest)")
          ->check(CLI::ExistingFile);
      return [a] { return run_quantize(*a); };
    }};

}  // namespace
