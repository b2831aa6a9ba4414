// `ds4ctl plan` end to end: the report and the documented exit codes (0 fits, 3 below floor,
// 4 does not fit, 2 error), from figures given directly and from the tiny GGUF with a fake
// /proc/meminfo.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun ds4ctl(const std::string& args) {
  CliRun r;
  FILE* p = popen((std::string(DS4D_DS4CTL_BINARY) + " plan " + args + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

const std::string kFlashQ2 =
    "--weights 86720111552 --sidecar 5.64GiB --kv-per-token 13760 --kv-fixed 215294976 "
    "--workspace 2GiB --reserve 4GiB --floor 4GiB --mem-total 127.6GB";

// The last line says which device ds4d would run the model on (--backend as engine.backend):
// here without a GPU, the CPU saying why, and `cuda` an error naming what is missing; with one,
// the GPU and where the weights would go.
TEST(PlanCli, SaysWhichDeviceWouldRunTheModel) {
  const std::string fig = kFlashQ2 + " --hot-cache 12GiB --context 262144 --max-batch 1";
  const CliRun cpu = ds4ctl(fig + " --backend cpu");
  EXPECT_EQ(cpu.status, 0) << cpu.out;
  EXPECT_NE(cpu.out.find("\ndevice: CPU (--backend cpu)\n"), std::string::npos) << cpu.out;
  const CliRun automatic = ds4ctl(fig);
  const bool gpu = automatic.out.find("\ndevice: CUDA on ") != std::string::npos ||
                   automatic.out.find("\ndevice: CPU, the model does not fit ") != std::string::npos;
  if (!gpu) {
    EXPECT_EQ(automatic.status, 0) << automatic.out;
    EXPECT_NE(automatic.out.find("\ndevice: CPU -- backend auto: CPU (no CUDA: "), std::string::npos) << automatic.out;
    const CliRun cuda = ds4ctl(fig + " --backend cuda");
    EXPECT_EQ(cuda.status, 2) << cuda.out;
    EXPECT_NE(cuda.out.find("ds4ctl plan: --backend cuda: no usable CUDA device: "), std::string::npos) << cuda.out;
  }
  const CliRun bad = ds4ctl(fig + " --backend gpu");
  EXPECT_NE(bad.status, 0) << bad.out;
  EXPECT_NE(bad.out.find("--backend: gpu not in {auto,cpu,cuda}"), std::string::npos) << bad.out;
}

TEST(PlanCli, ShippingFiguresFit) {
  const CliRun r = ds4ctl(kFlashQ2 + " --hot-cache 12GiB --context 262144 --max-batch 1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("115,925,764,687 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: fits"), std::string::npos) << r.out;
}

// --max-batch (server.max_batch): each live context adds its own 3,822,396,416 B of KV; auto
// takes the most that fit (2 here, with 7.38 GB above the floor after the first).
TEST(PlanCli, MaxBatchCountsLiveContexts) {
  const std::string shipping = kFlashQ2 + " --hot-cache 12GiB --context 262144";
  const CliRun two = ds4ctl(shipping + " --max-batch 2");
  EXPECT_EQ(two.status, 0) << two.out;
  EXPECT_NE(two.out.find("(2 live contexts × 3.56 GiB: 13,760 B/token × 262144 tokens"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("119,748,161,103 B"), std::string::npos) << two.out;
  const CliRun three = ds4ctl(shipping + " --max-batch 3");
  EXPECT_EQ(three.status, 3) << three.out;  // below the floor
  EXPECT_NE(three.out.find("live contexts (max batch)"), std::string::npos) << three.out;
  const CliRun automatic = ds4ctl(shipping);
  EXPECT_EQ(automatic.status, 0) << automatic.out;
  EXPECT_NE(automatic.out.find("(2 live contexts (auto) ×"), std::string::npos) << automatic.out;
  for (const char* bad : {"0", "65", "abc"}) {
    const CliRun r = ds4ctl(shipping + " --max-batch " + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--max-batch: expected 1..64 or auto, got '" + std::string(bad) + "'"), std::string::npos)
        << r.out;
  }
}

TEST(PlanCli, VerdictsHaveDistinctExitCodes) {
  EXPECT_EQ(ds4ctl(kFlashQ2 + " --hot-cache 20GiB --context 262144").status, 3);
  EXPECT_EQ(ds4ctl(kFlashQ2 + " --hot-cache 20GiB --context 1048576").status, 4);
  const CliRun bad = ds4ctl("--model /nonexistent.gguf --mem-total 64GiB");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("/nonexistent.gguf"), std::string::npos) << bad.out;
  EXPECT_EQ(ds4ctl("--weights 12GiB --mem-total 64GiB").status, 2);  // no KV figures
}

TEST(PlanCli, FromTheTinyGgufAndAFakeMeminfo) {
  const std::string meminfo = (std::filesystem::temp_directory_path() / "ds4ctl-plan-meminfo").string();
  {
    std::ofstream m(meminfo);
    m << "MemTotal:       16777216 kB\nMemAvailable:    8388608 kB\n";
  }
  const char* vectors = std::getenv("DS4D_DS4_VECTORS");
  const std::string model =
      vectors ? std::string(vectors) + "/model.gguf" : std::string(DS4D_SHARED_DIR) + "/vectors/ds4-tiny/model.gguf";
  const CliRun r = ds4ctl("--model " + model + " --context 4096 --hot-cache 1GiB --meminfo " + meminfo);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1,312 B/token × 4096 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("17,179,869,184 B"), std::string::npos) << r.out;  // MemTotal 16 GiB
  std::filesystem::remove(meminfo);
}

}  // namespace
