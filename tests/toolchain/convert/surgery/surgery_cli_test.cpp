// ds4ctl surgery / hash-route-report / gate from the command line: exit statuses and what they
// print, on the official-format export of ds4-tiny.
#include <gtest/gtest.h>

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

TEST(SurgeryCli, ReportPlanCutAndGate) {
  const fs::path d = scratch_dir("surgery_cli");
  std::ofstream(d / "calib.txt") << "The weather in Paris is mild today; convert 12 miles to km and list my files.\n";
  const CliRun h = run("hash-route-report " + official_tiny().string() + " --text " + (d / "calib.txt").string() +
                           " --keep 8 --repair t1 --plan-out " + (d / "t1.toml").string() + " --max-memory 1MiB",
                       d);
  ASSERT_EQ(h.status, 0) << h.err;
  EXPECT_NE(h.out.find("hash layer 2: naive cut"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("T1 remap"), std::string::npos) << h.out;

  const CliRun s = run(
      "surgery " + official_tiny().string() + " -o " + (d / "cut").string() + " --plan " + (d / "t1.toml").string(), d);
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("8 routed experts per layer"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("load check: full passed"), std::string::npos) << s.out;

  std::ofstream(d / "bad.toml") << "name = \"x\"\n[layer.3]\nrequantize = true\n";
  const CliRun b = run(
      "surgery " + official_tiny().string() + " -o " + (d / "bad").string() + " --plan " + (d / "bad.toml").string(),
      d);
  EXPECT_EQ(b.status, 1);
  EXPECT_NE(b.err.find("needs arithmetic on quantized weights"), std::string::npos) << b.err;

  std::ofstream(d / "p.jsonl") << "{\"tokens\": [1, 40, 41, 300, 7, 9, 12, 600]}\n";
  const CliRun g = run("gate --baseline " + ds4_tiny_model() + " --candidate " + ds4_tiny_model() + " --prompts " +
                           (d / "p.jsonl").string() + " --greedy 2",
                       d);
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.out.find("delta +0.00%"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("verdict: pass"), std::string::npos) << g.out;
}

}  // namespace
}  // namespace ds4::convert::test
