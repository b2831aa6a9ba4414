// The official number formats: E4M3/E8M0/E2M1 values, FP8/FP4 encode-decode, and the FP4 ->
// GGUF MXFP4 repack checked against GGML's own MXFP4 vectors (both nibble orders).
#include "toolchain/convert/official_formats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "engine/quant/quant.hpp"

namespace ds4::convert {
namespace {

TEST(OfficialFormats, KnownValues) {
  EXPECT_EQ(e8m0_value(127), 1.0f);
  EXPECT_EQ(e8m0_value(130), 8.0f);
  EXPECT_EQ(e8m0_value(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(e8m0_value(0xff)));
  EXPECT_EQ(e4m3_value(0x38), 1.0f);                  // exponent 7, mantissa 0
  EXPECT_EQ(e4m3_value(0x7e), 448.0f);                // the largest finite value
  EXPECT_EQ(e4m3_value(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_value(0xb8), -1.0f);
  EXPECT_TRUE(std::isnan(e4m3_value(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_value(0xff)));
  EXPECT_EQ(e2m1_value(7), 6.0f);
  EXPECT_EQ(e2m1_value(9), -0.5f);
  for (int x = 0; x < 256; ++x)
    if ((x & 0x7f) != 0x7f && (x & 0x7f) != 0) {
      EXPECT_EQ(f32_to_e4m3(e4m3_value(uint8_t(x))), x) << x;
    }
  EXPECT_EQ(f32_to_e4m3(1e6f), 0x7e);  // saturates
}

TEST(OfficialFormats, Fp8AndFp4RoundTripWithinFormatPrecision) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 0.05f);
  const uint64_t rows = 200, cols = 384;  // partial 128-blocks on the row side
  std::vector<float> w(rows * cols), back(rows * cols);
  for (float& x : w) x = nd(rng);
  std::vector<uint8_t> q(rows * cols), s(2 * 3);
  encode_fp8(w.data(), rows, cols, q.data(), s.data());
  decode_fp8_rows(q.data(), s.data(), cols, 0, rows, back.data());
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < w.size(); ++i) e2 += (back[i] - w[i]) * (back[i] - w[i]), r2 += w[i] * w[i];
  EXPECT_LT(std::sqrt(e2 / r2), 0.04);  // 3 mantissa bits
  // Row-offset decoding sees the same values.
  std::vector<float> part(10 * cols);
  decode_fp8_rows(q.data(), s.data(), cols, 150, 10, part.data());
  EXPECT_EQ(0, std::memcmp(part.data(), back.data() + 150 * cols, part.size() * 4));

  std::vector<uint8_t> q4(rows * cols / 2), s4(rows * cols / 32);
  encode_fp4(w.data(), rows, cols, q4.data(), s4.data());
  decode_fp4_rows(q4.data(), s4.data(), cols, 0, rows, back.data());
  e2 = 0;
  for (size_t i = 0; i < w.size(); ++i) e2 += (back[i] - w[i]) * (back[i] - w[i]);
  EXPECT_LT(std::sqrt(e2 / r2), 0.2);  // E2M1
}

TEST(OfficialFormats, NanScaleIsRejected) {
  std::vector<uint8_t> q(2 * 32 / 2, 0x11), s{127, 0xff};
  std::vector<float> out(64);
  EXPECT_THROW(decode_fp4_rows(q.data(), s.data(), 32, 0, 2, out.data()), std::runtime_error);
  std::vector<uint8_t> mx(17);
  EXPECT_THROW(repack_fp4_row_to_mxfp4(q.data() + 16, s.data() + 1, 32, mx.data()), std::runtime_error);
}

// GGML's MXFP4 vectors: rebuild the official FP4 layout from GGML's blocks (element j = low
// nibble of qs[j], j+16 = high nibble), then check that (a) decoding it gives GGML's dequant
// bit for bit and (b) repacking it reproduces GGML's bytes exactly.
TEST(OfficialFormats, Fp4RepackMatchesGgmlMxfp4Vectors) {
  const std::string path = std::string(DS4D_QUANT_VECTORS_DEFAULT) + "/mxfp4.vec";
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << path;
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint32_t h[9];
  std::memcpy(h, b.data() + 4, sizeof h);  // version, type, rows, per_row, row_bytes, ...
  ASSERT_EQ(h[1], 39u);
  const uint32_t rows = h[2], n = h[3], rb = h[4];
  size_t pos = 4 + 4 * 8;       // magic, then 8 u32 fields
  pos += size_t(rows) * n * 4;  // src
  const uint8_t* quant = b.data() + pos;
  const float* dequant = reinterpret_cast<const float*>(b.data() + pos + size_t(rows) * rb);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint8_t* g = quant + size_t(r) * rb;
    std::vector<uint8_t> fp4(n / 2), sc(n / 32), mx(rb);
    for (uint32_t blk = 0; blk < n / 32; ++blk) {
      sc[blk] = g[blk * 17];
      uint8_t code[32];
      for (int j = 0; j < 16; ++j) code[j] = g[blk * 17 + 1 + j] & 15, code[j + 16] = g[blk * 17 + 1 + j] >> 4;
      for (int j = 0; j < 16; ++j) fp4[blk * 16 + j] = uint8_t(code[2 * j] | code[2 * j + 1] << 4);
    }
    std::vector<float> dec(n);
    decode_fp4_rows(fp4.data(), sc.data(), n, 0, 1, dec.data());
    ASSERT_EQ(0, std::memcmp(dec.data(), dequant + size_t(r) * n, n * 4)) << "row " << r;
    repack_fp4_row_to_mxfp4(fp4.data(), sc.data(), n, mx.data());
    ASSERT_EQ(0, std::memcmp(mx.data(), g, rb)) << "row " << r;
    // And our engine's MXFP4 dequantizer agrees with the official decoding.
    std::vector<float> eng(n);
    quant::traits(quant::Type::MXFP4).dequantize(mx.data(), eng.data(), n);
    ASSERT_EQ(0, std::memcmp(eng.data(), dec.data(), n * 4)) << "row " << r;
  }
}

}  // namespace
}  // namespace ds4::convert
