// Every class of malformed GGUF the reader must reject, each with the message and byte offset it
// must report. Images are built byte by byte (RawGguf) so they can be wrong in exactly one way.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "engine/gguf/gguf_reader.hpp"
#include "tests/engine/gguf/raw_gguf.hpp"
#include "tests/engine/gguf/test_paths.hpp"

namespace ds4::gguf {
namespace {

using test::RawGguf;

struct Failure {
  std::string what;
  std::optional<uint64_t> offset;
};

Failure parse_failure(const RawGguf& r) {
  try {
    GgufFile::from_memory(r.b, "test.gguf");
  } catch (const GgufError& e) {
    return {e.what(), e.offset()};
  }
  return {"(parsed without error)", std::nullopt};
}

#define EXPECT_REJECTS(raw, text, off) \
  do { \
    Failure f_ = parse_failure(raw); \
    EXPECT_NE(f_.what.find(text), std::string::npos) << "message: " << f_.what; \
    EXPECT_EQ(f_.what.rfind("test.gguf: ", 0), 0u) << "message: " << f_.what; \
    EXPECT_EQ(f_.offset, std::optional<uint64_t>(off)) << "message: " << f_.what; \
  } while (0)

// A valid image: two kvs, two F32 tensors of 8 elements (32 bytes each).
RawGguf valid() {
  RawGguf r;
  r.header(2, 2).kv_u32("general.alignment", 32).kv_str("general.name", "t");
  r.tensor("a", {8}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(64);
  return r;
}

TEST(GgufMalformed, ValidBaselineParses) {
  RawGguf r = valid();
  GgufFile f = GgufFile::from_memory(r.b, "test.gguf");
  EXPECT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensor("b").offset, 32u);
  EXPECT_EQ(f.data(f.tensor("b")), r.b.data() + f.data_offset() + 32);
}

TEST(GgufMalformed, EmptyAndTinyFiles) {
  EXPECT_REJECTS(RawGguf{}, "not a GGUF file: only 0 bytes", 0u);
  RawGguf r;
  r.put<uint32_t>(0x46554747);
  EXPECT_REJECTS(r, "truncated header: version needs 4 bytes, only 0 left", 4u);
}

TEST(GgufMalformed, BadMagic) {
  RawGguf r = valid();
  r.b[0] = std::byte{'X'};
  EXPECT_REJECTS(r, "bad magic \"XGUF\": not a GGUF file", 0u);
}

TEST(GgufMalformed, UnsupportedVersions) {
  RawGguf r;
  r.header(0, 0, 1);
  EXPECT_REJECTS(r, "unsupported GGUF version 1", 4u);
  RawGguf r4;
  r4.header(0, 0, 4);
  EXPECT_REJECTS(r4, "unsupported GGUF version 4", 4u);
  RawGguf be;
  be.header(0, 0, 0x03000000);
  EXPECT_REJECTS(be, "big-endian GGUF files are not supported", 4u);
}

TEST(GgufMalformed, Version2IsReadable) {
  RawGguf r;
  r.header(0, 1, 2).kv_u32("x", 5);
  GgufFile f = GgufFile::from_memory(r.b, "test.gguf");
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get<uint32_t>("x"), 5u);
}

TEST(GgufMalformed, TruncatedHeaderAtEveryByte) {
  RawGguf full = valid();
  GgufFile ok = GgufFile::from_memory(full.b, "test.gguf");
  // Every prefix shorter than the full file fails cleanly with a GgufError.
  for (size_t n = 0; n < full.size(); ++n) {
    RawGguf cut;
    cut.b.assign(full.b.begin(), full.b.begin() + n);
    Failure f = parse_failure(cut);
    EXPECT_EQ(f.what.rfind("test.gguf: ", 0), 0u) << "prefix " << n << ": " << f.what;
    if (n < ok.data_offset() - 4) {  // before the table ends (byte 156), the header itself is cut
      EXPECT_TRUE(f.what.find("truncated header") != std::string::npos ||
                  f.what.find("runs past the end of the file") != std::string::npos)
          << "prefix " << n << ": " << f.what;
    }
  }
}

TEST(GgufMalformed, StringLengthPastEnd) {
  RawGguf r;
  r.header(0, 1).put<uint64_t>(1000).b.resize(r.size() + 10);
  EXPECT_REJECTS(r, "metadata key length 1000 runs past the end of the file (10 bytes left)", 24u);
  RawGguf v;
  v.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(UINT64_MAX);
  EXPECT_REJECTS(v, "string value length 18446744073709551615 runs past the end", 37u);
}

TEST(GgufMalformed, AbsurdCounts) {
  RawGguf r;
  r.header(0, 1000000).zeros(100);
  EXPECT_REJECTS(r, "metadata count 1000000 cannot fit in the 100 bytes left (absurd count or truncated header)", 16u);
  RawGguf t;
  t.header(UINT64_MAX, 0).zeros(100);
  EXPECT_REJECTS(t, "tensor count 18446744073709551615 cannot fit in the 100 bytes left (absurd count", 8u);
  RawGguf a;
  a.header(0, 1).str("arr").put<uint32_t>(9).put<uint32_t>(10).put<uint64_t>(1u << 30).zeros(16);
  EXPECT_REJECTS(a, "metadata key 'arr': array of 1073741824 u64 elements cannot fit in the 16 bytes left", 43u);
}

TEST(GgufMalformed, UnknownValueTypes) {
  RawGguf r;
  r.header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0);
  EXPECT_REJECTS(r, "metadata key 'k': unknown value type 13", 33u);
  RawGguf a;
  a.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(99).put<uint64_t>(0);
  EXPECT_REJECTS(a, "metadata key 'k': unknown array element type 99", 37u);
}

TEST(GgufMalformed, InvalidBoolAndNestingDepth) {
  RawGguf b;
  b.header(0, 1).str("flag").put<uint32_t>(7).put<uint8_t>(2);
  EXPECT_REJECTS(b, "metadata key 'flag': bool value 2 is neither 0 nor 1", 40u);
  RawGguf n;
  n.header(0, 1).str("deep").put<uint32_t>(9);
  for (int i = 0; i < 5; ++i) n.put<uint32_t>(9).put<uint64_t>(1);
  n.put<uint32_t>(4).put<uint64_t>(1).put<uint32_t>(0);
  Failure f = parse_failure(n);
  EXPECT_NE(f.what.find("metadata key 'deep': arrays nested deeper than 4"), std::string::npos) << f.what;
}

TEST(GgufMalformed, NestedArraysWithinTheLimitParse) {
  RawGguf n;
  n.header(0, 1).str("nest").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(2);
  n.put<uint32_t>(8).put<uint64_t>(1).str("x");
  n.put<uint32_t>(4).put<uint64_t>(2).put<uint32_t>(1).put<uint32_t>(2);
  GgufFile f = GgufFile::from_memory(n.b, "test.gguf");
  const Array& outer = std::get<Array>(f.find("nest")->v);
  ASSERT_EQ(outer.items.size(), 2u);
  EXPECT_EQ(std::get<Array>(outer.items[0].v).items[0], Value("x"));
  EXPECT_EQ(std::get<Array>(outer.items[1].v).items[1], Value(uint32_t{2}));
  EXPECT_EQ(outer.items[1].type_description(), "u32 array");
}

TEST(GgufMalformed, DuplicateKeyAndTensorName) {
  RawGguf k;
  k.header(0, 2).kv_u32("dup", 1).kv_u32("dup", 2);
  EXPECT_REJECTS(k, "duplicate metadata key 'dup'", 43u);
  RawGguf t;
  t.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad().zeros(64);
  EXPECT_REJECTS(t, "duplicate tensor name 'w'", 57u);
}

TEST(GgufMalformed, Alignment) {
  RawGguf a;
  a.header(0, 1).kv_u32("general.alignment", 24);
  EXPECT_REJECTS(a, "general.alignment 24 is not a power of two", 24u);
  RawGguf b;
  b.header(0, 1).kv_str("general.alignment", "32");
  EXPECT_REJECTS(b, "general.alignment must be a u32, found string", 24u);
  RawGguf m;
  m.header(1, 0).tensor("w", {8}, 0, 16).pad().zeros(64);
  EXPECT_REJECTS(m, "tensor 'w': data offset 16 is not a multiple of the alignment 32", 49u);
}

TEST(GgufMalformed, TensorShapeAndType) {
  RawGguf nd;
  nd.header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0);
  EXPECT_REJECTS(nd, "tensor 'w': 5 dimensions (must be 1..4)", 33u);
  RawGguf z;
  z.header(1, 0).tensor("w", {8, 0}, 0, 0);
  EXPECT_REJECTS(z, "tensor 'w': dimension 1 is zero", 45u);
  RawGguf o;
  o.header(1, 0).tensor("w", {1ull << 32, 1ull << 32}, 0, 0);
  EXPECT_REJECTS(o, "tensor 'w': element count overflows (dimension 1 = 4294967296)", 45u);
  RawGguf ty;
  ty.header(1, 0).tensor("w", {8}, 7, 0);
  EXPECT_REJECTS(ty, "tensor 'w': unknown tensor type id 7", 45u);
  RawGguf blk;
  blk.header(1, 0).tensor("w", {48}, 8, 0);
  EXPECT_REJECTS(blk, "tensor 'w': row length 48 is not a multiple of the q8_0 block size 32", 45u);
}

TEST(GgufMalformed, DataOutOfBoundsAndTruncatedData) {
  RawGguf r = valid();
  r.b.resize(r.size() - 1);  // last tensor loses its final byte
  Failure f = parse_failure(r);
  EXPECT_NE(f.what.find("tensor 'b': data [32, +32) runs past the end of the file (data section has 63 bytes): "
                        "truncated data"),
            std::string::npos)
      << f.what;
  RawGguf far;
  far.header(1, 0).tensor("w", {8}, 0, 1ull << 40).pad().zeros(32);
  f = parse_failure(far);
  EXPECT_NE(f.what.find("tensor 'w': data [1099511627776, +32) runs past the end"), std::string::npos) << f.what;
  RawGguf wrap;
  wrap.header(1, 0).tensor("w", {8}, 0, UINT64_MAX - 31).pad().zeros(32);
  f = parse_failure(wrap);
  EXPECT_NE(f.what.find("runs past the end of the file"), std::string::npos) << f.what;
}

TEST(GgufMalformed, OverlappingTensors) {
  RawGguf r;
  r.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad().zeros(96);
  GgufFile::from_memory(valid().b);  // sanity: touching tensors are fine
  Failure f = parse_failure(r);
  EXPECT_NE(f.what.find("tensor 'b' (data offset 32) overlaps tensor 'a' (data offset 0, 64 bytes)"), std::string::npos)
      << f.what;
}

TEST(GgufMalformed, CorruptedDs4TinyHeaderNeverCrashes) {
  std::ifstream in(test::ds4_tiny_model(), std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::byte> orig(chars.size());
  std::memcpy(orig.data(), chars.data(), chars.size());
  const size_t header = 40147;
  // Truncations across the header: each is a clean error.
  for (size_t n = 0; n < header; n += 211) {
    std::span<const std::byte> cut(orig.data(), n);
    EXPECT_THROW(GgufFile::from_memory(cut), GgufError) << "prefix " << n;
  }
  // Byte flips across the header: either still valid or a clean error (never a crash).
  std::vector<std::byte> img = orig;
  int rejected = 0;
  for (size_t i = 0; i < header; i += 97) {
    std::byte saved = img[i];
    img[i] = ~saved;
    try {
      GgufFile::from_memory(img);
    } catch (const GgufError&) {
      ++rejected;
    }
    img[i] = saved;
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace ds4::gguf
