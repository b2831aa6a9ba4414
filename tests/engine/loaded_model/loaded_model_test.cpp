// load_model: the model and its tokenizer from one GGUF (the embedded agent model), and the
// errors a user sees when the file is missing, not a GGUF, or carries a tokenizer the engine
// cannot use: each names the file and the part that failed.
#include "engine/loaded_model/loaded_model.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"

namespace ds4 {
namespace {

std::filesystem::path temp_path(const std::string& name) { return std::filesystem::path(::testing::TempDir()) / name; }

// The load's error message; fails the test when the load succeeds.
ModelLoadError load_error(const std::filesystem::path& p) {
  try {
    load_model(p, LoadOptions{.threads = 1});
  } catch (const ModelLoadError& e) {
    return e;
  }
  ADD_FAILURE() << "loaded " << p;
  return ModelLoadError(p, "", "");
}

void expect_mentions(const ModelLoadError& e, const std::string& part, const std::string& reason) {
  const std::string what = e.what();
  EXPECT_EQ(e.part(), part) << what;
  EXPECT_NE(what.find(e.path().string()), std::string::npos) << what;
  EXPECT_NE(what.find(reason), std::string::npos) << what;
}

TEST(LoadedModel, LoadsTheModelAndItsTokenizer) {
  const LoadedModel m = load_model(DS4D_AGENT_MODEL, LoadOptions{.threads = 1});
  ASSERT_TRUE(m.model);
  EXPECT_EQ(m.tokenizer.vocab_size(), m.model->info().n_vocab);
  EXPECT_EQ(m.tokenizer.decode(m.tokenizer.encode_raw("hello")), "hello");
}

TEST(LoadedModel, MissingFileIsNamed) {
  const auto p = temp_path("no_such_model.gguf");
  std::filesystem::remove(p);
  const ModelLoadError e = load_error(p);
  EXPECT_EQ(e.path(), p);
  expect_mentions(e, "weights", "no such file");
}

TEST(LoadedModel, FileThatIsNotAGgufIsNamed) {
  const auto p = temp_path("not_a_model.gguf");
  std::ofstream(p) << "this is a text file, not a GGUF model\n";
  expect_mentions(load_error(p), "weights", "GGUF");
  std::filesystem::remove(p);
}

TEST(LoadedModel, UnusableTokenizerIsNamed) {
  // The agent model with a tokenizer kind the engine does not implement: the weights load, the
  // tokenizer does not.
  const auto src = gguf::GgufFile::open(DS4D_AGENT_MODEL);
  gguf::GgufWriter w = gguf::GgufWriter::copy_of(src);
  w.set("tokenizer.ggml.model", "llama");
  const auto p = temp_path("llama_tokenizer.gguf");
  w.write(p.string());
  const ModelLoadError e = load_error(p);
  expect_mentions(e, "tokenizer", "tokenizer.ggml.model");
  // The path once, not repeated by the GGUF layer's own prefix.
  const std::string what = e.what();
  EXPECT_EQ(what.find(p.string()), what.rfind(p.string())) << what;
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace ds4
