// The tiny agent model (models/ds4-tiny-agent.gguf, a DS4-layout model trained here) through the
// release path. Its direct model (the same weights with MXFP4 experts, which the official FP4
// format holds exactly) is exported to the official format (FP4 experts, FP8 attention, 2
// shards), converted back with the q2 and mxfp4 recipes, and run in the engine against the
// direct model on held-out evaluation prompts (models/ds4-tiny-agent.eval20.jsonl, the rendered
// prompts the model was evaluated on): prefill and two decode steps fed with the reference's
// greedy tokens, each within the ds4-tiny statistical thresholds (logit_agreement.hpp). Nothing
// here depends on the particular weights: the model may be retrained and replaced.
//
// Also the importance matrix on a trained model: an imatrix collected by the engine on the
// non-held-out prompts steers a second q2 conversion, which must meet the same thresholds; how
// close each q2 conversion comes to the direct model is printed (a measurement, not a check).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/model/model.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/toolchain/convert/convert_fixture.hpp"
#include "tests/toolchain/convert/logit_agreement.hpp"
#include "toolchain/convert/converter.hpp"
#include "toolchain/convert/export_official.hpp"
#include "toolchain/convert/imatrix_file.hpp"
#include "toolchain/imatrix/imatrix_collector.hpp"

namespace ds4::convert::test {
namespace {

const fs::path kAgent = fs::path(DS4D_SOURCE_DIR) / "models" / "ds4-tiny-agent.gguf";
const fs::path kEval = fs::path(DS4D_SOURCE_DIR) / "models" / "ds4-tiny-agent.eval20.jsonl";

// The rendered, tokenized prompt of each evaluation record (prompt_ids: chat template, tool
// definitions and all, as the agent model was evaluated), split by the record's held-out flag.
struct Prompts {
  std::vector<std::vector<int32_t>> heldout, calibration;
};
Prompts eval_prompts(uint32_t n_vocab) {
  Prompts p;
  std::ifstream in(kEval);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const boost::json::object r = boost::json::parse(line).as_object();
    std::vector<int32_t> ids;
    for (const auto& v : r.at("prompt_ids").as_array()) {
      ids.push_back(int32_t(v.to_number<int64_t>()));
      if (ids.back() < 0 || uint32_t(ids.back()) >= n_vocab)
        ADD_FAILURE() << kEval << ": token id " << ids.back() << " outside the model's vocabulary of " << n_vocab;
    }
    (r.at("heldout").as_bool() ? p.heldout : p.calibration).push_back(std::move(ids));
  }
  return p;
}

// Worst agreement of `got` with `ref` over the prompts: prefill, then four decode steps fed
// with the reference's greedy tokens (each checked at the thresholds unless !check).
Agreement agreement(const std::shared_ptr<Model>& got, const std::shared_ptr<Model>& ref,
                    const std::vector<std::vector<int32_t>>& prompts, const std::string& label, bool check = true) {
  Agreement worst;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Context g(got), r(ref);
    auto lr = r.prefill(prompts[i]);
    std::vector<float> rv(lr.begin(), lr.end());
    worst.note(compare(g.prefill(prompts[i]), rv, label + " prompt " + std::to_string(i), check));
    for (int step = 0; step < 2; ++step) {
      const int32_t next = int32_t(std::max_element(rv.begin(), rv.end()) - rv.begin());
      lr = r.decode(next);
      rv.assign(lr.begin(), lr.end());
      worst.note(
          compare(g.decode(next), rv, label + " prompt " + std::to_string(i) + " step " + std::to_string(step), check));
    }
  }
  std::printf("[ agent    ] %-34s min Pearson %.5f, rms/std mean %.5f max %.5f, max |d|/max|logit| %.5f\n",
              label.c_str(), worst.pearson, worst.mean_rms_ratio(), worst.rms_ratio, worst.max_ratio);
  return worst;
}

ConvertResult convert(const fs::path& src, const fs::path& out, const std::string& recipe,
                      const std::string& imatrix = "") {
  ConvertOptions o;
  o.source_dir = src.string();
  o.output = out.string();
  o.recipe = recipe;
  o.threads = 2;
  o.imatrix = imatrix;
  return convert_checkpoint(o);
}

TEST(AgentRoundTrip, Q2AndMxfp4ConversionsMatchTheDirectModel) {
  ASSERT_TRUE(fs::exists(kAgent)) << kAgent;
  const fs::path d = scratch_dir("agent_roundtrip");
  // The direct model: the agent model with MXFP4 experts, exactly what the FP4 export holds
  // (its IQ2_XXS/Q2_K values are not on the FP4 grid, so exporting the original would measure
  // that re-encoding too: Pearson 0.997, rms/std up to 0.16 against the original).
  write_with_mxfp4_experts(kAgent.string(), d / "direct.gguf");
  export_official((d / "direct.gguf").string(), (d / "official").string(), {.shards = 2});
  const ConvertResult q2 = convert(d / "official", d / "q2.gguf", "q2");
  const ConvertResult mx = convert(d / "official", d / "mxfp4.gguf", "mxfp4");
  for (const ConvertResult* r : {&q2, &mx})
    for (const Invariant& i : r->invariants) EXPECT_TRUE(i.ok) << r->recipe_name << " " << i.name << ": " << i.detail;
  // mxfp4 gives the direct model's experts back bit for bit.
  const gguf::GgufFile fd = gguf::GgufFile::open((d / "direct.gguf").string());
  const gguf::GgufFile fm = gguf::GgufFile::open((d / "mxfp4.gguf").string());
  for (const gguf::TensorInfo& t : fd.tensors())
    if (t.type == quant::Type::MXFP4) {
      EXPECT_EQ(0, std::memcmp(fd.data(t), fm.data(fm.tensor(t.name)), t.n_bytes)) << t.name;
    }

  const gguf::GgufFile agent = gguf::GgufFile::open(kAgent.string());
  const Prompts ev = eval_prompts(gguf::Ds4Dims::from_metadata(agent).n_vocab);
  ASSERT_GE(ev.heldout.size(), 2u) << kEval;
  ASSERT_FALSE(ev.calibration.empty()) << kEval;
  // Every other held-out prompt (a tool call, an answer after a tool result, plain chat), to
  // keep the wall time small.
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < ev.heldout.size(); i += 2) prompts.push_back(ev.heldout[i]);

  const auto direct = Model::load(d / "direct.gguf", {.threads = 2});
  const auto mq2 = Model::load(d / "q2.gguf", {.threads = 2});
  agreement(Model::load(d / "mxfp4.gguf", {.threads = 2}), direct, prompts, "mxfp4 conversion vs direct");
  const Agreement plain = agreement(mq2, direct, prompts, "q2 conversion vs direct");

  // The imatrix: collected by the engine on the calibration prompts through the q2 conversion
  // (the field's bootstrap order), then a second q2 conversion steered by it.
  const auto tok = tokenizer::Tokenizer::from_gguf(agent);
  std::string calib;
  for (const auto& ids : ev.calibration) calib += tok.decode(ids);
  const auto col = imatrix::collect((d / "q2.gguf").string(), calib,
                                    {.chunk_tokens = 256, .max_chunks = 8, .threads = 2, .dataset = {}});
  write_imatrix((d / "imatrix.dat").string(), col.imatrix);
  const ConvertResult q2i = convert(d / "official", d / "q2-imatrix.gguf", "q2", (d / "imatrix.dat").string());
  EXPECT_GT(q2i.imatrix_targets_covered, 0u);
  const Agreement weighted =
      agreement(Model::load(d / "q2-imatrix.gguf", {.threads = 2}), direct, prompts, "q2+imatrix conversion vs direct");
  std::printf("[ agent    ] imatrix: q2 mean rms/std vs direct %.5f -> %.5f (%+.1f%%)\n", plain.mean_rms_ratio(),
              weighted.mean_rms_ratio(), 100.0 * (weighted.mean_rms_ratio() / plain.mean_rms_ratio() - 1.0));
}

}  // namespace
}  // namespace ds4::convert::test
