// The MTP drafter (engine/model/mtp.hpp) on the ds4-tiny model with a sidecar made here from the
// model's own tensors: loading refuses what does not belong, the target keeps the final states
// the drafter reads, and a drafter's drafts depend only on the target's tokens, never on its own
// history (fresh, incremental, after a rollback, after a rejected draft, after a restore).
#include "engine/model/mtp.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"
#include "engine/gguf/sidecar_binding.hpp"
#include "engine/model/model.hpp"
#include "engine/quant/quant.hpp"
#include "tests/engine/model/mtp_sidecar.hpp"
#include "tests/engine/model/tiny_cases.hpp"

namespace ds4 {
namespace {

namespace fs = std::filesystem;

fs::path base_path() { return test::tiny_vectors_dir() / "model.gguf"; }

using test::write_sidecar;

struct Fixture {
  std::shared_ptr<Model> model;
  std::shared_ptr<const MtpModel> mtp;
  fs::path sidecar;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    LoadOptions o;
    o.threads = 2;
    x.model = Model::load(base_path(), o);
    x.sidecar = fs::temp_directory_path() / ("ds4d-mtp-test-" + std::to_string(::getpid()) + ".gguf");
    write_sidecar(x.sidecar);
    x.mtp = MtpModel::load(x.sidecar, x.model, base_path());
    fs::remove(x.sidecar);  // mapped: the name is no longer needed
    return x;
  }();
  return f;
}

std::vector<int32_t> tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(rng() % fixture().model->info().n_vocab);
  return t;
}

ContextOptions keeping() {
  ContextOptions o;
  o.keep_hidden = fixture().mtp->hidden_reach();
  return o;
}

TEST(Mtp, LoadRefusesAMissingTensorAndAnotherModelsSidecar) {
  const Fixture& f = fixture();
  const fs::path p = fs::temp_directory_path() / ("ds4d-mtp-bad-" + std::to_string(::getpid()) + ".gguf");
  write_sidecar(p, "mtp.0.h_proj.weight");
  try {
    (void)MtpModel::load(p, f.model, base_path());
    ADD_FAILURE() << "a sidecar without h_proj was loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mtp.0.h_proj.weight"), std::string::npos) << e.what();
  }
  write_sidecar(p, "", false);
  try {
    (void)MtpModel::load(p, f.model, base_path());
    ADD_FAILURE() << "an unbound sidecar was loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ds4d.mtp.base_digest"), std::string::npos) << e.what();
  }
  fs::remove(p);
}

TEST(Mtp, ContextKeepsFinalStatesOnlyWhenAsked) {
  const Fixture& f = fixture();
  Context plain(f.model), keep(f.model, keeping());
  const auto t = tokens(40, 1);
  plain.prefill(t);
  keep.prefill(t);
  EXPECT_TRUE(plain.hidden(39).empty());
  ASSERT_EQ(keep.hidden(39).size(), size_t(f.model->info().n_hc) * f.model->info().n_embd);
  EXPECT_FALSE(keep.hidden(0).empty());
  EXPECT_TRUE(keep.hidden(40).empty());
  // A verified row's state equals the decoded one's.
  Context d(f.model, keeping()), v(f.model, keeping());
  d.prefill(t);
  v.prefill(t);
  const std::vector<int32_t> more{3, 4, 5};
  for (int32_t x : more) d.decode(x);
  v.verify(more);
  for (size_t p = 40; p < 43; p++)
    EXPECT_EQ(std::memcmp(d.hidden(p).data(), v.hidden(p).data(), d.hidden(p).size_bytes()), 0) << p;
  v.truncate(41);
  EXPECT_TRUE(v.hidden(41).empty());
  EXPECT_FALSE(v.hidden(40).empty());
}

TEST(Mtp, DraftsDependOnlyOnTheTargetsTokens) {
  const Fixture& f = fixture();
  const size_t window = f.mtp->hidden_reach();
  // Longer than the block's window, so the incremental drafter's oldest rows fall out of reach.
  const auto t = tokens(window + 70, 2);
  Context target(f.model, keeping());
  target.prefill(std::span<const int32_t>(t).first(20));
  MtpDrafter inc(f.mtp);
  for (size_t n = 20; n < t.size(); n++) {
    const auto drafts = inc.draft(target, t[n], 4);
    ASSERT_EQ(drafts.size(), 4u);
    if (n % 17 == 0 || n + 1 == t.size()) {
      MtpDrafter fresh(f.mtp);
      EXPECT_EQ(fresh.draft(target, t[n], 4), drafts) << "at " << n;
      EXPECT_TRUE(test::same_bits(fresh.last_logits(), inc.last_logits())) << "at " << n;
    }
    // The target verifies the token and the drafts, then keeps only the token: a rejection.
    std::vector<int32_t> row{t[n]};
    row.insert(row.end(), drafts.begin(), drafts.end());
    target.verify(row);
    target.truncate(n + 1);
  }
  // Rolled back behind the drafter's rows, then extended with other tokens: the rows of the
  // old tokens must go (kept, they would stay in the block's window).
  // (A rollback of up to 32 rows keeps the block's ring; a deeper one starts it over.)
  target.truncate(t.size() - 30);
  const auto other = tokens(50, 3);
  target.prefill(std::span<const int32_t>(other).first(10));
  size_t differ = 0;
  for (size_t i = 10; i < other.size(); i++) {
    MtpDrafter fresh(f.mtp);
    const auto drafts = inc.draft(target, other[i], 4);
    EXPECT_EQ(fresh.draft(target, other[i], 4), drafts) << "after the rollback, at " << i;
    EXPECT_TRUE(test::same_bits(fresh.last_logits(), inc.last_logits())) << "after the rollback, at " << i;
    target.decode(other[i]);
    differ += drafts[0] != other[i];
  }
  EXPECT_GT(differ, 0u);
  EXPECT_TRUE(inc.draft(target, 7, 0).empty());
}

TEST(Mtp, NoStateNoDraftsAfterARestore) {
  const Fixture& f = fixture();
  Context a(f.model, keeping());
  a.prefill(tokens(30, 4));
  Context b(f.model, keeping());
  b.restore(a.snapshot());
  MtpDrafter d(f.mtp);
  EXPECT_TRUE(d.draft(b, 5, 3).empty());  // the snapshot carries no final states
  b.decode(5);
  EXPECT_EQ(d.draft(b, 6, 3).size(), 3u);
  Context plain(f.model);
  plain.prefill(tokens(5, 4));
  EXPECT_TRUE(d.draft(plain, 5, 3).empty());  // a target that keeps none
}

}  // namespace
}  // namespace ds4
