#pragma once
// The number formats of the official DeepSeek V4 Flash checkpoint, decoded to f32 row by row
// (and encoded, for the fixture generator):
//   * FP8 E4M3 ("e4m3fn": no infinities, 0x7f/0xff are NaN) weights [out, in] with one E8M0
//     scale per 128x128 block, scale tensor [ceil(out/128), ceil(in/128)];
//   * FP4 E2M1 routed experts packed two per byte (element 2j in the low nibble of byte j,
//     2j+1 in the high nibble), dtype I8 [out, in/2], one E8M0 scale per 32 inputs [out, in/32];
//   * E8M0 scales: value 2^(e-127); 0xff is NaN and is rejected.
// GGUF MXFP4 blocks hold the same E2M1 codes and E8M0 exponent, but put element j in the low
// nibble of byte j and element j+16 in its high nibble; repack_fp4_row_to_mxfp4 moves the
// nibbles and copies the exponent, so the conversion is bit-lossless (the dequantized values are
// identical, which tests/convert checks).
// Decoders throw std::runtime_error naming the offending element; callers add file and tensor.
#include <cstddef>
#include <cstdint>

namespace ds4::convert {

float e8m0_value(uint8_t e);     // NaN for 0xff
float e4m3_value(uint8_t x);     // NaN for 0x7f / 0xff
float e2m1_value(uint8_t code);  // code in 0..15
uint8_t f32_to_e4m3(float x);    // round to nearest (ties to even code), saturating at ±448

// Rows [row0, row0+n) of an FP8 weight with `in` columns; `w` and `scale` point to the whole
// tensors. out receives n*in floats.
void decode_fp8_rows(const uint8_t* w, const uint8_t* scale, uint64_t in, uint64_t row0, uint64_t n, float* out);
// Rows of a packed FP4 weight with `in` (unpacked) columns.
void decode_fp4_rows(const uint8_t* w, const uint8_t* scale, uint64_t in, uint64_t row0, uint64_t n, float* out);
// One FP4 row (in/2 bytes, in/32 scales) as in/32 GGUF MXFP4 blocks (17 bytes each).
void repack_fp4_row_to_mxfp4(const uint8_t* w_row, const uint8_t* scale_row, uint64_t in, uint8_t* out);

// The inverse (fixture generator: a GGUF with MXFP4 experts exports to FP4 without loss).
void repack_mxfp4_row_to_fp4(const uint8_t* mx, uint64_t in, uint8_t* w_row, uint8_t* scale_row);

// Encoders (fixture generator). FP8: block scale 2^ceil(log2(amax/448)); FP4: per-32 scale
// 2^ceil(log2(amax/6)), values rounded to the nearest code.
void encode_fp8(const float* w, uint64_t out_rows, uint64_t in, uint8_t* q, uint8_t* scale);
void encode_fp4(const float* w, uint64_t out_rows, uint64_t in, uint8_t* q, uint8_t* scale);

}  // namespace ds4::convert
