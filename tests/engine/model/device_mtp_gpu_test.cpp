// The MTP drafter of a model loaded for the device (engine/model/device/device_mtp.hpp) against
// the same drafter on the CPU, on ds4-tiny with a sidecar written here: the same drafts and the
// same logits bits at every step of a decode that rejects the drafts (the block's draft rows
// taken back each time), then after a rollback within the block's ring and one
// past it (the block starts over). The first draft catches up on 13 rows at once, so the
// block's projections and experts run their many-row paths (GEMM, grouped experts) too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <span>
#include <vector>

#include "engine/model/mtp.hpp"
#include "tests/engine/model/device_test_support.hpp"
#include "tests/engine/model/mtp_sidecar.hpp"

namespace ds4 {
namespace {

namespace fs = std::filesystem;

TEST(DeviceMtpGpu, DraftsAndLogitsAreTheCpusThroughRejectionsAndRollbacks) {
  SKIP_WITHOUT_GPU();
  const fs::path tiny = test::tiny_vectors_dir() / "model.gguf";
  LoadOptions o;
  o.arithmetic = Arithmetic::Fast;
  o.threads = 1;
  const std::shared_ptr<Model> cpu = test::device::fast_tiny();
  o.device = ComputeDevice::Cuda;
  const std::shared_ptr<Model> dev = Model::load(tiny, o);
  const fs::path sidecar = fs::temp_directory_path() / ("ds4d-device-mtp-" + std::to_string(::getpid()) + ".gguf");
  test::write_sidecar(sidecar);
  const auto mtp_cpu = MtpModel::load(sidecar, cpu, tiny), mtp_dev = MtpModel::load(sidecar, dev, tiny);
  fs::remove(sidecar);
  EXPECT_NE(mtp_dev->placement().find("on the device"), std::string::npos) << mtp_dev->placement();
  EXPECT_NE(mtp_cpu->placement().find("on the CPU"), std::string::npos) << mtp_cpu->placement();

  const std::vector<int32_t> t = test::random_tokens(*cpu, 60, 7);
  test::DraftersSideBySide p(cpu, mtp_cpu, dev, mtp_dev, std::span<const int32_t>(t).first(12));
  Context &tc = p.tc, &td = p.td;
  MtpDrafter &dc = p.dc, &dd = p.dd;
  const auto step = [&](int32_t next, const char* where) {
    const auto want = dc.draft(tc, next, 3), got = dd.draft(td, next, 3);
    ASSERT_EQ(want.size(), 3u) << where;
    EXPECT_EQ(got, want) << where;
    EXPECT_TRUE(test::same_bits(dd.last_logits(), dc.last_logits())) << where;
    // The target takes the token alone (the drafts rejected): the drafter's draft rows go.
    tc.decode(next);
    td.decode(next);
  };
  for (size_t n = 12; n < 14; n++) step(t[n], "decoding");
  // Back 1 token (the block's ring keeps its row: it is taken back), then another token.
  tc.truncate(13);
  td.truncate(13);
  step(t[40], "after a rollback within the ring");
  // Back past the block's first row: it starts over, catching up on what the target kept.
  tc.truncate(6);
  td.truncate(6);
  step(t[50], "after a rollback past the block's rows");
}

}  // namespace
}  // namespace ds4
