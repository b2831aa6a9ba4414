// `ds4ctl inspect` end to end: the family table and exit 0 on valid models (ds4-tiny, the forged
// tiny model), exit 1 with the violation on stderr for broken copies, truncated and non-GGUF files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/engine/gguf/gguf_variants.hpp"
#include "tests/engine/gguf/test_paths.hpp"

namespace ds4::gguf {
namespace {

struct InspectRun {
  int status;
  std::string output;  // stdout and stderr together
};

InspectRun ds4ctl(const std::string& args) {
  const std::string cmd = "'" + test::ds4ctl_binary() + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

InspectRun inspect(const std::string& path) { return ds4ctl("inspect '" + path + "'"); }

class InspectTest : public ::testing::Test {
 protected:
  std::string write_variant(const test::Variant& v, const std::string& stem) {
    static GgufFile src = GgufFile::open(test::forged_tiny_model());
    const std::string path = dir() + "/" + stem + ".gguf";
    test::make_variant(src, v).write(path);
    return path;
  }
  static std::string dir() {
    static std::string d = [] {
      auto p = std::filesystem::temp_directory_path() / ("ds4-inspect-test-" + std::to_string(getpid()));
      std::filesystem::create_directories(p);
      return p.string();
    }();
    return d;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir()); }
};

TEST_F(InspectTest, Ds4TinyIsValid) {
  InspectRun r = inspect(test::ds4_tiny_model());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("GGUF v3, 50 metadata keys, 181 tensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("6 layers, n_embd 256, vocab 1024"), std::string::npos) << r.output;
  // routed experts: 18 tensors, 5308416 bytes; a decode reads 6/16 of them.
  EXPECT_NE(r.output.find("routed experts            18 iq2_xxs,q2_K"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("5308416"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1990656"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("total                    181"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("layout: OK"), std::string::npos) << r.output;
}

TEST_F(InspectTest, ForgedTinyIsValid) {
  InspectRun r = inspect(test::forged_tiny_model());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("layout: OK"), std::string::npos) << r.output;
}

TEST_F(InspectTest, MissingTensorFails) {
  test::Variant v;
  v.tensor = [](const TensorInfo& t) { return test::drop_named(t, "blk.2.indexer.proj.weight"); };
  InspectRun r = inspect(write_variant(v, "missing"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("error: " + dir() +
                          "/missing.gguf: missing tensor 'blk.2.indexer.proj.weight' "
                          "(compressor/indexer)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 layout violation"), std::string::npos) << r.output;
}

TEST_F(InspectTest, WrongTypeFails) {
  test::Variant v;
  v.tensor = [](const TensorInfo& t) -> std::optional<test::TensorEdit> {
    if (t.name == "output.weight") return test::TensorEdit{.type = quant::Type::F16};
    return std::nullopt;
  };
  InspectRun r = inspect(write_variant(v, "wrongtype"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tensor 'output.weight' has type f16, the engine accepts q8_0"), std::string::npos)
      << r.output;
}

TEST_F(InspectTest, MalformedFilesFailCleanly) {
  const std::string trunc = dir() + "/truncated.gguf";
  {
    std::ifstream in(test::forged_tiny_model(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(trunc, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 1000));
  }
  InspectRun r = inspect(trunc);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tensor 'output.weight': data"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("truncated data"), std::string::npos) << r.output;

  const std::string text = dir() + "/text.gguf";
  std::ofstream(text) << "hello, not a model\n";
  r = inspect(text);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("bad magic \"hell\": not a GGUF file"), std::string::npos) << r.output;

  r = inspect(dir() + "/absent.gguf");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("cannot open: No such file or directory"), std::string::npos) << r.output;
}

TEST_F(InspectTest, ForgeCommandWritesTheBuildTimeModel) {
  const std::string out = dir() + "/forged.gguf";
  InspectRun r = ds4ctl("forge --preset tiny --seed 1 -o '" + out + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("preset tiny, seed 1, 181 tensors"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bytes-per-token: 13233484"), std::string::npos) << r.output;
  // Same preset and seed as the build-time model: the same bytes.
  std::ifstream a(out, std::ios::binary), b(test::forged_tiny_model(), std::ios::binary);
  std::string x((std::istreambuf_iterator<char>(a)), {}), y((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(x.size(), y.size());
  EXPECT_TRUE(x == y);
  r = ds4ctl("forge --preset enormous -o '" + dir() + "/x.gguf'");
  EXPECT_NE(r.status, 0) << r.output;
}

}  // namespace
}  // namespace ds4::gguf
