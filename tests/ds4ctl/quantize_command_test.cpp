// `ds4ctl dequantize` and `ds4ctl quantize` as processes: the embedded model, decoded to F32 (each
// tensor bit-identical to its type's decoder) and re-encoded with the q2 recipe, gets the q2 type
// of every tensor back (and passes the DS4 layout check quantize runs); an input that is not F32
// is refused with an error naming the tensor; dequantize will not overwrite its own input; an MTP
// sidecar is encoded by the MTP catalogue and bound to its base by --mtp-base, and refused without
// a binding or with a base of other dims.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "engine/quant/quant.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"

namespace {

namespace fs = std::filesystem;
using ds4::gguf::GgufFile;

struct ProcessResult {
  int status;
  std::string out;
};

ProcessResult ds4ctl(const std::string& args) {
  ProcessResult r{-1, {}};
  FILE* p = ::popen((std::string(DS4D_DS4CTL_BINARY) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("quantize_test_" + std::to_string(::getpid()) + "_" + name);
}

TEST(QuantizeCommand, DecodedModelReencodesToTheSameTypes) {
  const GgufFile model = GgufFile::open(DS4D_AGENT_MODEL);
  const fs::path f32 = temp("f32.gguf"), q2 = temp("q2.gguf");
  const ProcessResult d = ds4ctl(std::string("dequantize -i ") + DS4D_AGENT_MODEL + " -o " + f32.string());
  ASSERT_EQ(d.status, 0) << d.out;
  {
    // Every tensor is F32 (I32 kept) and holds exactly what the type's decoder gives.
    const GgufFile decoded = GgufFile::open(f32.string());
    ASSERT_EQ(decoded.tensors().size(), model.tensors().size());
    for (const auto& t : model.tensors()) {
      const auto& o = decoded.tensor(t.name);
      EXPECT_EQ(o.dims, t.dims) << t.name;
      if (t.type == ds4::quant::Type::I32) {
        EXPECT_EQ(o.type, t.type) << t.name;
        continue;
      }
      ASSERT_EQ(o.type, ds4::quant::Type::F32) << t.name;
      std::vector<float> f(t.n_elements);
      const uint64_t ne0 = t.dims[0], rb = t.row_bytes();
      for (uint64_t r = 0; r < t.rows(); ++r)
        ds4::quant::traits(t.type).dequantize(model.data(t) + r * rb, f.data() + r * ne0, int64_t(ne0));
      EXPECT_EQ(std::memcmp(decoded.data(o), f.data(), f.size() * 4), 0) << t.name;
    }
  }
  const ProcessResult r = ds4ctl("quantize -i " + f32.string() + " -o " + q2.string() + " --recipe q2");
  ASSERT_EQ(r.status, 0) << r.out;
  const GgufFile out = GgufFile::open(q2.string());
  ASSERT_EQ(out.tensors().size(), model.tensors().size());
  for (const auto& t : model.tensors()) EXPECT_EQ(out.tensor(t.name).type, t.type) << t.name;
  fs::remove(f32);
  fs::remove(q2);
}

TEST(QuantizeCommand, DequantizeRefusesToOverwriteItsInput) {
  const fs::path copy = temp("self.gguf");
  fs::copy_file(DS4D_AGENT_MODEL, copy);
  const auto before = fs::file_size(copy);
  const ProcessResult r = ds4ctl("dequantize -i " + copy.string() + " -o " + copy.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("overwrite the input"), std::string::npos) << r.out;
  EXPECT_EQ(fs::file_size(copy), before);
  fs::remove(copy);
}

TEST(QuantizeCommand, RefusesQuantizedInputNamingTheTensor) {
  const fs::path out = temp("refused.gguf");
  const ProcessResult r = ds4ctl(std::string("quantize -i ") + DS4D_AGENT_MODEL + " -o " + out.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("token_embd.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F32"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST(QuantizeCommand, MtpSidecarIsEncodedByTheMtpCatalogueAndBoundToItsBase) {
  // An F32 sidecar with no binding: the forged tiny model's drafter, decoded, without ds4d.* keys
  // (so it is known by its mtp.0.* tensor names).
  const fs::path m1 = temp("m1.gguf"), m2 = temp("m2.gguf"), side = temp("m1.mtp.gguf");
  const fs::path bound = temp("bound-f32.gguf"), f32 = temp("mtp-f32.gguf"), out = temp("mtp-q.gguf");
  for (const auto& [seed, path, extra] : {std::tuple{1, m1, " --mtp"}, std::tuple{2, m2, ""}}) {
    const ProcessResult f =
        ds4ctl("forge --preset tiny --seed " + std::to_string(seed) + " -o " + path.string() + extra);
    ASSERT_EQ(f.status, 0) << f.out;
  }
  ASSERT_TRUE(fs::exists(side));
  const ProcessResult d = ds4ctl("dequantize -i " + side.string() + " -o " + bound.string());
  ASSERT_EQ(d.status, 0) << d.out;
  {
    const GgufFile b = GgufFile::open(bound.string());
    ds4::gguf::GgufWriter w;
    for (const auto& kv : b.metadata())
      if (kv.key.rfind("ds4d.", 0) != 0) w.set(kv.key, kv.value);
    for (const auto& t : b.tensors()) w.add_tensor(t.name, t.type, t.dims, b.bytes(t));
    w.write(f32.string());
  }

  const ProcessResult unbound = ds4ctl("quantize -i " + f32.string() + " -o " + out.string());
  EXPECT_NE(unbound.status, 0);
  EXPECT_NE(unbound.out.find("--mtp-base"), std::string::npos) << unbound.out;
  const ProcessResult other_dims =
      ds4ctl("quantize -i " + f32.string() + " -o " + out.string() + " --mtp-base " + DS4D_AGENT_MODEL);
  EXPECT_NE(other_dims.status, 0);
  EXPECT_NE(other_dims.out.find("metadata key 'deepseek4."), std::string::npos) << other_dims.out;
  EXPECT_FALSE(fs::exists(out));

  const ProcessResult q = ds4ctl("quantize -i " + f32.string() + " -o " + out.string() + " --mtp-base " + m1.string());
  ASSERT_EQ(q.status, 0) << q.out;
  const GgufFile o = GgufFile::open(out.string());
  const auto rules = ds4::convert::mtp_catalogue(ds4::gguf::Ds4Dims::from_metadata(o));
  ASSERT_EQ(o.tensors().size(), rules.size());
  for (const auto& r : rules) {
    const auto& t = o.tensor(r.name);
    EXPECT_EQ(t.type, r.allowed.front()) << r.name;  // the q2 recipe's type
  }
  EXPECT_TRUE(ds4::convert::check_mtp_layout(o).empty());
  EXPECT_NO_THROW(ds4::gguf::check_sidecar_binding(m1.string(), out.string()));
  try {
    ds4::gguf::check_sidecar_binding(m2.string(), out.string());
    ADD_FAILURE() << "a sidecar bound to another base passed";
  } catch (const ds4::gguf::GgufError& e) {
    EXPECT_NE(std::string(e.what()).find(ds4::gguf::kMtpBaseDigestKey), std::string::npos) << e.what();
  }
  for (const fs::path& p : {m1, m2, side, bound, f32, out}) fs::remove(p);
}

}  // namespace
