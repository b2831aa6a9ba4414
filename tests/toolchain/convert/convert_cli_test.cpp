// ds4ctl convert / export-official / verify-sidecar / export-w4a16 from the command line: exit
// statuses, plain progress lines when stderr is not a terminal, the audit files, and an error
// message naming the file and tensor.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/toolchain/convert/convert_fixture.hpp"

namespace ds4::convert::test {
namespace {

struct CliRun {
  int status;
  std::string out, err;
};

CliRun run(const std::string& args, const fs::path& dir) {
  const std::string o = (dir / "stdout").string(), e = (dir / "stderr").string();
  const int rc = std::system((std::string(DS4D_DS4CTL_BINARY) + " " + args + " > " + o + " 2> " + e).c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(o), slurp(e)};
}

TEST(ConvertCli, ConvertsWithAuditAndPlainProgress) {
  const fs::path d = scratch_dir("cli_ok");
  const CliRun r =
      run("convert " + official_tiny().string() + " -o " + (d / "m.gguf").string() + " --recipe mxfp4 --threads 2", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("peak RSS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("invariant routed_experts"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("convert: 100.0%"), std::string::npos) << r.err;  // plain lines, not a bar
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_TRUE(fs::exists(d / "m.audit.json"));
  EXPECT_TRUE(fs::exists(d / "m.audit.txt"));
  // A sidecar check on a main file that is no sidecar: exit 1 with the reason.
  const CliRun v = run("verify-sidecar " + (d / "m.gguf").string() + " " + (d / "m.gguf").string(), d);
  EXPECT_EQ(v.status, 1);
  EXPECT_NE(v.err.find("not an MTP sidecar"), std::string::npos) << v.err;
}

TEST(ConvertCli, BadInputExitsOneNamingFileAndTensor) {
  const fs::path d = copy_of_official("cli_bad");
  const std::string name = "layers.0.attn.wkv.weight", shard = shard_of(d, name);
  rewrite_shard(d, shard, [&](auto& es) {
    auto& e = entry(es, name);
    std::swap(e.shape[0], e.shape[1]);
  });
  const CliRun r = run("convert " + d.string() + " -o " + (d / "m.gguf").string(), d);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(shard), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'" + name + "'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "m.gguf"));
  EXPECT_NE(run("convert " + d.string() + " -o x.gguf --recipe q3", d).status, 0);
}

TEST(ConvertCli, ExportW4a16) {
  const fs::path d = scratch_dir("cli_w4a16");
  const CliRun r = run("export-w4a16 " + official_tiny().string() + " -o " + (d / "w").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("routed experts SNR"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d / "w" / "w4a16.audit.txt"));
}

}  // namespace
}  // namespace ds4::convert::test
