// ds4ctl generate and ds4ctl bench, run as processes on the ds4-tiny reference model. These check
// exit status, output shape and determinism, never timings. Where the model runs in exact
// arithmetic, generate's greedy tokens must be the reference engine's (cases.json), which covers
// the whole path: tokenizer, chat rendering, model and sampler.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/engine/tokenizer/text_test_paths.hpp"

namespace ds4::text_tests {
namespace {

struct ProcessResult {
  int status = -1;
  std::string out, err;
};

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessResult ds4ctl(const std::string& args) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const auto err_path = dir / ("ds4ctl_text_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string cmd = std::string(DS4D_DS4CTL_BINARY) + " " + args + " 2>" + err_path.string();
  ProcessResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_file(err_path);
  std::filesystem::remove(err_path);
  return r;
}

std::string model() { return ds4_vectors_dir() + "/model.gguf"; }

const boost::json::object& find_case(std::string_view name) {
  static const boost::json::value cases = boost::json::parse(read_file(ds4_vectors_dir() + "/cases.json"));
  for (const auto& c : cases.at("cases").as_array())
    if (c.at("name").as_string() == name) return c.as_object();
  throw std::runtime_error("no case " + std::string(name));
}

std::string join_ids(const boost::json::value& arr, size_t n, const char* sep) {
  std::string s;
  size_t i = 0;
  for (const auto& v : arr.as_array()) {
    if (i++ == n) break;
    if (!s.empty()) s += sep;
    s += std::to_string(v.as_int64());
  }
  return s;
}

std::string line_after(const std::string& text, const std::string& label) {
  size_t at = text.find(label);
  if (at == std::string::npos) return "<missing " + label + ">";
  at += label.size();
  return text.substr(at, text.find('\n', at) - at);
}

TEST(Ds4ctlGenerate, ExactGreedyMatchesReferenceOnRand8) {
  const auto& c = find_case("rand8");
  ProcessResult r = ds4ctl("generate -m " + model() + " --prompt-ids " + join_ids(c.at("prompt"), 99, ",") +
                           " -n 12 --temp 0 --exact -t 2 --show-ids");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(line_after(r.err, "generated ids: "), join_ids(c.at("greedy"), 12, " "));
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(prompt: 8 tokens in [0-9.]+ s, [0-9.]+ tok/s)"))) << r.err;
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex(R"(generation: 12 tokens in [0-9.]+ s, [0-9.]+ tok/s \(11 decode steps)")))
      << r.err;
}

TEST(Ds4ctlGenerate, GreedyIsDeterministicAcrossRunsAndThreadCounts) {
  const std::string args =
      "generate -m " + model() + " --prompt-ids 0,835,594,271,994,759,730,670 " + "-n 16 --temp 0 --show-ids";
  ProcessResult a = ds4ctl(args + " -t 1");
  ProcessResult b = ds4ctl(args + " -t 2");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(line_after(a.err, "generated ids: "), line_after(b.err, "generated ids: "));
  const std::string ids = line_after(a.err, "generated ids: ");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), ' '), 15) << ids;  // 16 ids
}

TEST(Ds4ctlGenerate, ChatRendersTheReferencePrompt) {
  const auto& c = find_case("text64");
  const std::string text(c.at("text").as_string());
  ProcessResult r =
      ds4ctl("generate -m " + model() + " --chat -p '" + text + "' -n 2 --temp 0 --exact -t 2 --show-ids");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(line_after(r.err, "prompt ids: "), join_ids(c.at("prompt"), 999, " "));
  EXPECT_EQ(line_after(r.err, "generated ids: "), join_ids(c.at("greedy"), 2, " "));
}

TEST(Ds4ctlGenerate, SampledOutputIsReproducibleForASeed) {
  const std::string args = "generate -m " + model() + " -p 'The cache' -n 10 --temp 0.8 " +
                           "--top-k 40 --top-p 0.95 --min-p 0.02 --seed 7 --show-ids -t 2";
  ProcessResult a = ds4ctl(args), b = ds4ctl(args);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(line_after(a.err, "generated ids: "), line_after(b.err, "generated ids: "));
  EXPECT_NE(line_after(a.err, "sampling: ").find("seed 7"), std::string::npos);
  // Plain prompts get BOS prepended.
  EXPECT_EQ(line_after(a.err, "prompt ids: ").rfind("0 ", 0), 0u);
}

TEST(Ds4ctlGenerate, RejectsBadArguments) {
  EXPECT_NE(ds4ctl("generate -m " + model()).status, 0);                        // no prompt
  EXPECT_NE(ds4ctl("generate -m /nonexistent.gguf -p x").status, 0);            // no file
  EXPECT_NE(ds4ctl("generate -m " + model() + " -p x --top-p 1.5").status, 0);  // bad top-p
  EXPECT_NE(ds4ctl("generate -m " + model() + " --prompt-ids 0,99999 -n 1").status, 0);
}

TEST(Ds4ctlBench, PrintsRooflineAndOneRowPerContext) {
  ProcessResult r = ds4ctl("bench -m " + model() + " -t 2 --contexts 0,16,40 --decode-tokens 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(total +[0-9.]+ MiB)"))) << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(roofline: memory [0-9.]+ GB/s, kernels [0-9.]+ GB/s -> [0-9.]+ GB/s)")))
      << r.out;
  for (const char* type : {"q8_0", "q2_K", "iq2_xxs", "f16"})
    EXPECT_TRUE(
        std::regex_search(r.out, std::regex(std::string(R"(\n  )") + type + R"( +[0-9.]+ MiB +[0-9.]+% +[0-9.]+\n)")))
        << type << "\n"
        << r.out;
  EXPECT_NE(r.out.find("context  prefill tok/s"), std::string::npos) << r.out;
  const std::string num = R"( +[0-9.]+)";
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +0 +-)" + num + num + num + R"( +[0-9]+%)"))) << r.out;
  // On the CPU the launches column (the GPU's kernel launches per token) and the graphs column
  // (decode with CUDA graphs over without) say "-".
  EXPECT_NE(r.out.find("roofline   launches/tok   graphs"), std::string::npos) << r.out;
  for (const char* ctx : {"16", "40"})
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex(std::string(R"(\n +)") + ctx + num + num + num + num + R"( +[0-9]+% +- +-\n)")))
        << ctx << "\n"
        << r.out;
}

TEST(Ds4ctlForged, GenerateAndBenchRunOnTheForgedTinyModel) {
  const std::string forged = forged_tiny_model();
  if (forged.empty()) GTEST_SKIP() << "this build has no forged_tiny_model target";
  ProcessResult g = ds4ctl("generate -m " + forged + " --chat -p 'Hello, world' -n 6 --temp 0 " + "-t 2 --show-ids");
  ASSERT_EQ(g.status, 0) << g.err;
  const std::string ids = line_after(g.err, "generated ids: ");
  EXPECT_TRUE(std::regex_match(ids, std::regex(R"([0-9]+( [0-9]+){0,5})"))) << ids;
  ProcessResult b = ds4ctl("bench -m " + forged + " -t 2 --contexts 0,8 --decode-tokens 2");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(b.out.find("roofline: memory"), std::string::npos) << b.out;
}

TEST(Ds4ctlBench, KernelTableWithoutAModel) {
  ProcessResult r = ds4ctl("bench --kernels -t 1");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* type : {"f32", "f16", "q8_0", "q2_K", "iq2_xxs"})
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string(R"(\n  )") + type + R"( +[0-9.]+ +[0-9.]+ +[0-9]+%)")))
        << type << "\n"
        << r.out;
  EXPECT_NE(r.out.find("memory read bandwidth:"), std::string::npos);
}

TEST(Ds4ctlBenchBatch, ChecksBitIdentityAndPrintsOneRowPerLevel) {
  ProcessResult r = ds4ctl("bench-batch -m " + model() + " -t 2 --sessions 3,2 --context 20 --steps 1 --repeats 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("logits of 3 batched sessions vs each served alone, 4 steps: bit-identical"), std::string::npos)
      << r.out;
  // ms/step (min..max) aggregate per-session ratio, CPU ms/step, CPU ratio
  const std::string num = R"( +[0-9.]+ +\([0-9.]+\.\.[0-9.]+\) +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+ +[0-9.]+x\n)";
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +1 \(solo\))" + num))) << r.out;
  for (const char* n : {"1", "2", "3"})  // 1 added as the ratios' baseline
    EXPECT_TRUE(std::regex_search(r.out, std::regex(std::string(R"(\n +)") + n + num))) << n << "\n" << r.out;
  const ProcessResult zero = ds4ctl("bench-batch -m " + model() + " --sessions 2,0");
  EXPECT_NE(zero.status, 0);
  EXPECT_NE(zero.err.find("--sessions"), std::string::npos) << zero.err;
  EXPECT_NE(zero.err.find("\"0\" is not a session count (1..256)"), std::string::npos) << zero.err;
}

TEST(Ds4ctlBenchServe, ChecksOutputsAgainstSoloAndPrintsBothParts) {
  ProcessResult r = ds4ctl("bench-serve -m " + model() +
                           " -t 2 --clients 3 --prompt 12 --tokens 4 --long-prompt 96 --beside 8 --repeats 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("outputs identical to each served alone"), std::string::npos) << r.out;
  // clients, wall s, aggregate, per-client, ratio; 1 added as the ratios' baseline
  for (const char* n : {"1", "3"})
    EXPECT_TRUE(
        std::regex_search(r.out, std::regex(std::string(R"(\n +)") + n + R"( +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x\n)")))
        << n << "\n"
        << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(while a 96-token prompt arrives +[0-9]+ +[0-9.]+ +[0-9.]+\n)")))
      << r.out;
  EXPECT_NE(r.out.find("p99 ratio"), std::string::npos) << r.out;
  const ProcessResult zero = ds4ctl("bench-serve -m " + model() + " --clients 2,0");
  EXPECT_NE(zero.status, 0);
  EXPECT_NE(zero.err.find("\"0\" is not a client count (1..64)"), std::string::npos) << zero.err;
}

TEST(Ds4ctlBenchSpec, ChecksOutputsAgainstKZeroAndPrintsOneRowPerDepth) {
  const ProcessResult r = ds4ctl(std::string("bench-spec -m ") + DS4D_AGENT_MODEL +
                                 " -t 2 --tokens 16 --repeats 1 --k 0,2 --drafters ngram,oracle,oracle:0");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(drafter +K +tokens +drafted +accepted +acceptance +tok/s +vs K=0\n)")))
      << r.out;
  // drafter, K, tokens, drafted, accepted, acceptance, tok/s, ratio
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\nnone +0 +[0-9]+ +0 +0 +- +[0-9.]+ +1\.00x\n)"))) << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(\nngram +2 +[0-9]+ +[0-9]+ +[0-9]+ +([0-9.]+|-) +[0-9.]+ +[0-9.]+x\n)")))
      << r.out;
  // The oracle proposes K = 0's own output: every draft right, or (rate 0) every one wrong.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\noracle +2 +[0-9]+ +([1-9][0-9]*) +\1 +1\.00 +)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\noracle:0 +2 +[0-9]+ +[1-9][0-9]* +0 +0\.00 +)"))) << r.out;
  EXPECT_NE(r.out.find("every output identical to K = 0's: yes"), std::string::npos) << r.out;
  // The MTP path: the forged tiny model's random-weight drafter (it drafts, the target rejects).
  const ProcessResult m = ds4ctl(std::string("bench-spec -m ") + DS4D_FORGED_TINY_MODEL +
                                 " -t 2 --tokens 6 --repeats 1 --k 0,2 --drafters mtp:" + DS4D_FORGED_TINY_MTP);
  ASSERT_EQ(m.status, 0) << m.err << m.out;
  EXPECT_TRUE(std::regex_search(
      m.out, std::regex(R"(\nmtp:\S+ +2 +[0-9]+ +[1-9][0-9]* +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x\n)")))
      << m.out;
  EXPECT_NE(m.out.find("every output identical to K = 0's: yes"), std::string::npos) << m.out;
  const ProcessResult bad = ds4ctl(std::string("bench-spec -m ") + DS4D_AGENT_MODEL + " --drafters ngram,eagle");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("unknown drafter 'eagle'"), std::string::npos) << bad.err;
  const ProcessResult rate = ds4ctl(std::string("bench-spec -m ") + DS4D_AGENT_MODEL + " --drafters oracle:1.5");
  EXPECT_NE(rate.status, 0);
  EXPECT_NE(rate.err.find("oracle takes a rate in [0, 1]"), std::string::npos) << rate.err;
}

TEST(Ds4ctlBench, RejectsBadArguments) {
  EXPECT_NE(ds4ctl("bench").status, 0);  // neither a model nor --kernels
  const ProcessResult abc = ds4ctl("bench -m " + model() + " --contexts 0,abc");
  EXPECT_NE(abc.status, 0);
  EXPECT_NE(abc.err.find("\"abc\" is not a token count"), std::string::npos) << abc.err;
  EXPECT_NE(ds4ctl("bench -m " + model() + " --contexts 0,,8").status, 0);  // an empty item
}

}  // namespace
}  // namespace ds4::text_tests
