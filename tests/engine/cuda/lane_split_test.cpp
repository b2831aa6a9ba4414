// The device matvec kernels' decompositions written out on the CPU, lane by lane, with the same
// `__host__ __device__` steps (engine/quant/fast_blocks.hpp): the four-lane unit split of
// matvec_blocks.cuh with its integer and xor-tree shuffles, and the halving __shfl_down_sync tree
// of matvec_float in matvec.cuh. Each must give the bits of the generic CPU Fast dot: this checks
// the split of every format's units on a machine without a GPU (the kernels themselves need one:
// matvec_gpu_test.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/fast_blocks.hpp"
#include "engine/quant/quant.hpp"

namespace {
namespace fast = ds4::quant::fast;
namespace arith = ds4::quant::arith;
using ds4::quant::Type;
constexpr ds4::quant::Isa kGenericFast{ds4::quant::Arch::Generic, ds4::quant::Order::Fast};

// A lane's value after `__shfl_xor_sync(v, m)` added to its own: a + b for every lane at once.
template <class T, class Add>
void xor_level(T (&v)[32], int m, Add add) {
  T next[32];
  for (int l = 0; l < 32; l++) next[l] = add(v[l], v[l ^ m]);
  for (int l = 0; l < 32; l++) v[l] = next[l];
}

// matvec_blocks<Block> for one weight row and one activation row, as its 32 lanes compute it.
template <class Block>
float emulate_blocks(const void* wrow, const void* arow, int64_t cols) {
  const auto* w = static_cast<const typename Block::Weight*>(wrow);
  const auto* a = static_cast<const typename Block::Act*>(arow);
  constexpr int kPer = Block::kUnits / 4;
  const int64_t nb = cols / Block::kElems;
  float acc[32] = {};
  for (int64_t b0 = 0; b0 < nb; b0 += fast::kSlices) {
    fast::IntSums sums[32];
    for (int l = 0; l < 32; l++) {
      const int64_t b = b0 + l / 4;
      sums[l] = b < nb ? Block::sums(w[b], a[b], (l % 4) * kPer, kPer) : fast::IntSums{0, 0};
    }
    auto add = [](fast::IntSums x, fast::IntSums y) { return fast::IntSums{x.isum + y.isum, x.summs + y.summs}; };
    xor_level(sums, 1, add);
    xor_level(sums, 2, add);
    for (int l = 0; l < 32; l++) {
      const int64_t b = b0 + l / 4;
      if (b < nb) acc[l] = Block::update(acc[l], w[b], a[b], sums[l]);
    }
  }
  for (int m : {4, 8, 16}) xor_level(acc, m, arith::add);
  return Block::finish(acc[0]);
}

// matvec_float<Elem> for one row: lane l's product, the __shfl_down_sync halving (a lane whose
// partner is past 31 keeps its own value), lane 0's block value into its slice.
template <class Elem>
float emulate_float(const void* wrow, const float* x, int64_t cols) {
  const auto* w = static_cast<const typename Elem::T*>(wrow);
  float part[fast::kSlices] = {};
  for (int64_t b = 0; b * 32 < cols; b++) {
    float p[32];
    for (int l = 0; l < 32; l++) {
      const int64_t i = b * 32 + l;
      p[l] = i < cols ? arith::mul(Elem::load(w[i]), x[i]) : 0.0f;
    }
    for (int d = 16; d >= 1; d /= 2)
      for (int l = 0; l < 32; l++) p[l] = arith::add(p[l], l + d < 32 ? p[l + d] : p[l]);
    part[fast::slice_of(b)] = arith::add(part[fast::slice_of(b)], p[0]);
  }
  return fast::tree(part);
}

float emulate(Type type, const void* w, const void* act, int64_t cols) {
  switch (type) {
    case Type::MXFP4: return emulate_blocks<fast::Mxfp4Block>(w, act, cols);
    case Type::Q2_K: return emulate_blocks<fast::Q2KBlock>(w, act, cols);
    case Type::Q4_K: return emulate_blocks<fast::Q4KBlock>(w, act, cols);
    case Type::IQ2_XXS: return emulate_blocks<fast::Iq2XxsBlock>(w, act, cols);
    case Type::F32: return emulate_float<fast::F32Elem>(w, static_cast<const float*>(act), cols);
    case Type::F16: return emulate_float<fast::F16Elem>(w, static_cast<const float*>(act), cols);
    case Type::BF16: return emulate_float<fast::Bf16Elem>(w, static_cast<const float*>(act), cols);
    default: ADD_FAILURE() << "no emulation"; return 0.0f;
  }
}

class LaneSplit : public ::testing::TestWithParam<Type> {};

TEST_P(LaneSplit, GivesTheGenericFastDotBits) {
  const Type type = GetParam();
  const int64_t block = ds4::quant::type_info(type).block_elems;
  // Block counts that are not a multiple of the 8 slices, and fewer blocks than slices; the
  // float formats also get a short last block.
  const std::vector<int64_t> shapes =
      block == 1 ? std::vector<int64_t>{1, 31, 1000, 32 * 67} : std::vector<int64_t>{block * 3, block * 9, block * 17};
  std::mt19937 rng(7 + static_cast<int>(type));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const Type vdt = ds4::quant::traits(type).vec_dot_type;
  for (const int64_t cols : shapes) {
    const size_t rb = ds4::quant::row_bytes(type, static_cast<uint64_t>(cols));
    const size_t ab = ds4::quant::act_row_bytes(vdt, cols);
    std::vector<float> v(cols);
    std::vector<uint8_t> w(rb), act(ab);
    for (int rep = 0; rep < 6; rep++) {
      for (auto& e : v) e = nd(rng) * (rep == 0 ? 1e-6f : 1.0f);
      ds4::quant::quantize_row(type, v.data(), w.data(), cols, nullptr);
      for (auto& e : v) e = nd(rng) * static_cast<float>(rep + 1);
      ds4::quant::quantize_activation(vdt, v.data(), act.data(), cols);
      const float want = ds4::quant::dot(type, w.data(), act.data(), cols, kGenericFast);
      const float got = emulate(type, w.data(), act.data(), cols);
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
          << ds4::quant::type_info(type).name << " cols " << cols << " rep " << rep << ": " << got << " vs " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, LaneSplit,
                         ::testing::Values(Type::MXFP4, Type::Q2_K, Type::Q4_K, Type::IQ2_XXS, Type::F32, Type::F16,
                                           Type::BF16),
                         [](const auto& i) { return std::string(ds4::quant::type_info(i.param).name); });

}  // namespace
