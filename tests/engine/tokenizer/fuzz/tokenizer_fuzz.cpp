// libFuzzer target: the DS4 tokenizer on arbitrary bytes.
//
// The vocabulary is the real one, read from a DS4-layout GGUF named by DS4D_FUZZ_TOKENIZER_MODEL
// (run_tokenizer_fuzz.sh passes the shared tiny model). Properties checked on every input:
//  - encode() and encode_raw() never crash, and every id they return is inside the vocabulary;
//  - decode(encode(s)) == s and decode(encode_raw(s)) == s, for any bytes (the README promises
//    the round trip; invalid UTF-8 included, since the byte-level alphabet covers every byte);
//  - encode_raw() never emits a special-token id (client text must not become control tokens);
//  - decode() of arbitrary ids (the input read as little-endian int32s) either returns or throws
//    std::out_of_range for an id outside the vocabulary — nothing else.
// A broken property aborts with the input, which libFuzzer keeps as a crash artifact.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace {

std::unique_ptr<ds4::tokenizer::Tokenizer> g_tok;
std::set<int32_t> g_special;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer property broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* model = std::getenv("DS4D_FUZZ_TOKENIZER_MODEL");
  if (!model) {
    std::fprintf(stderr, "set DS4D_FUZZ_TOKENIZER_MODEL to a DS4 GGUF with a tokenizer\n");
    std::exit(2);
  }
  auto file = ds4::gguf::GgufFile::open(model);
  g_tok = std::make_unique<ds4::tokenizer::Tokenizer>(ds4::tokenizer::Tokenizer::from_gguf(file));
  using T = ds4::tokenizer::Tokenizer;
  for (std::string_view s : {T::kBos, T::kEos, T::kUser, T::kAssistant, T::kThinkStart, T::kThinkEnd, T::kDsml}) {
    const auto ids = g_tok->encode(s);
    if (ids.size() == 1) g_special.insert(ids[0]);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& tok = *g_tok;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto n = static_cast<int32_t>(tok.vocab_size());

  const std::vector<int32_t> ids = tok.encode(text);
  for (int32_t id : ids) check(id >= 0 && id < n, "encode returned an id outside the vocabulary");
  check(tok.decode(ids) == text, "decode(encode(s)) != s");

  const std::vector<int32_t> raw = tok.encode_raw(text);
  for (int32_t id : raw) {
    check(id >= 0 && id < n, "encode_raw returned an id outside the vocabulary");
    check(g_special.count(id) == 0, "encode_raw emitted a special token");
  }
  check(tok.decode(raw) == text, "decode(encode_raw(s)) != s");

  std::vector<int32_t> arbitrary(size / 4);
  if (!arbitrary.empty()) std::memcpy(arbitrary.data(), data, arbitrary.size() * 4);
  try {
    (void)tok.decode(arbitrary);
  } catch (const std::out_of_range&) {
    bool outside = false;
    for (int32_t id : arbitrary) outside = outside || id < 0 || id >= n;
    check(outside, "decode threw out_of_range for ids inside the vocabulary");
  }
  return 0;
}
