// Every architecture kernel set this machine runs (AVX2 on x86; NEON and NEON+dotprod on arm64,
// where the test command runs this suite under qemu with and without dotprod) against the
// generic kernels on random data. In each order (Exact: ds4's; Fast: docs/arithmetic.md) every
// kernel, single-row and multi-row, must give the generic kernel's bits, so neither order
// depends on the ISA. Activation quantizers must give the generic bytes. Without an
// architecture set (or with DS4D_ISA=scalar) the tests skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/blocks.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {

using namespace detail;

// Random but well-formed weight rows: random level/sign/grid bytes, scales in a sane range.
std::vector<uint8_t> random_weights(Type type, int64_t n, std::mt19937& rng) {
  const size_t bytes = row_bytes(type, static_cast<uint64_t>(n));
  std::vector<uint8_t> w(bytes);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f), val(-1.0f, 1.0f);
  auto f16 = [&] { return f32_to_f16(scale(rng)); };
  switch (type) {
    case Type::Q8_0:
      for (auto* b = reinterpret_cast<BlockQ8_0*>(w.data()); b < reinterpret_cast<BlockQ8_0*>(w.data() + bytes); b++)
        b->d = f16();
      break;
    case Type::Q2_K:
      for (auto* b = reinterpret_cast<BlockQ2_K*>(w.data()); b < reinterpret_cast<BlockQ2_K*>(w.data() + bytes); b++)
        b->d = f16(), b->dmin = f16();
      break;
    case Type::Q4_K:
      for (auto* b = reinterpret_cast<BlockQ4_K*>(w.data()); b < reinterpret_cast<BlockQ4_K*>(w.data() + bytes); b++)
        b->d = f16(), b->dmin = f16();
      break;
    case Type::IQ2_XXS:
      for (auto* b = reinterpret_cast<BlockIQ2_XXS*>(w.data()); b < reinterpret_cast<BlockIQ2_XXS*>(w.data() + bytes);
           b++)
        b->d = f16();
      break;
    case Type::MXFP4:
      for (auto* b = reinterpret_cast<BlockMXFP4*>(w.data()); b < reinterpret_cast<BlockMXFP4*>(w.data() + bytes); b++)
        b->e = static_cast<uint8_t>(115 + rng() % 16);
      break;
    case Type::F32:
      for (auto* f = reinterpret_cast<float*>(w.data()); f < reinterpret_cast<float*>(w.data() + bytes); f++)
        *f = val(rng);
      break;
    case Type::F16:
      for (auto* h = reinterpret_cast<uint16_t*>(w.data()); h < reinterpret_cast<uint16_t*>(w.data() + bytes); h++)
        *h = f32_to_f16(val(rng));
      break;
    case Type::BF16:
      for (auto* h = reinterpret_cast<uint16_t*>(w.data()); h < reinterpret_cast<uint16_t*>(w.data() + bytes); h++)
        *h = f32_to_bf16(val(rng));
      break;
    default: ADD_FAILURE() << "no generator for type " << static_cast<int>(type);
  }
  return w;
}

// Activations through the real quantizer, from heavy-tailed random floats.
std::vector<uint8_t> random_activation(Type w_type, int64_t n, std::mt19937& rng) {
  std::student_t_distribution<float> dist(3.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  const Type vdt = traits(w_type).vec_dot_type;
  std::vector<uint8_t> act(act_row_bytes(vdt, n));
  quantize_activation(vdt, x.data(), act.data(), n, Isa::Scalar);
  return act;
}

// The architecture under test: best_isa()'s, so DS4D_ISA selects it (the test command runs
// this binary with DS4D_ISA=neon on a dotprod CPU too).
Arch arch_under_test() { return best_isa().arch; }

const CpuKernels& generic(Type t) { return cpu_kernels(t, Arch::Generic); }

class SimdIdentityTest : public ::testing::TestWithParam<Type> {
 protected:
  void SetUp() override {
    if (arch_under_test() == Arch::Generic) GTEST_SKIP() << "no SIMD kernel set on this machine (or DS4D_ISA=scalar)";
  }
  const CpuKernels& simd(Type t) const { return cpu_kernels(t, arch_under_test()); }
};

// The kernel of one order: `dot` (Fast) or `dot_exact`.
DotFn order_dot(const CpuKernels& k, Order o) { return o == Order::Fast ? k.dot : k.dot_exact; }
DotMultiFn order_multi(const CpuKernels& k, Order o) { return o == Order::Fast ? k.dot_multi_fast : k.dot_multi; }
const char* order_name(Order o) { return o == Order::Fast ? "fast" : "exact"; }

TEST_P(SimdIdentityTest, IntegerDotsAreBitIdentical) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  const CpuKernels& k = simd(type);
  for (Order o : {Order::Fast, Order::Exact}) {
    ASSERT_NE(order_dot(k, o), order_dot(generic(type), o))
        << "no " << arch_name(arch_under_test()) << " " << order_name(o) << " kernel for this format";
    std::mt19937 rng(1234 + static_cast<int>(type));
    // Block counts 1..19 cover the 8-block SIMD batches and every tail length; the larger ones
    // give every Fast slice several blocks, in equal and unequal counts.
    std::vector<int> counts;
    for (int b = 1; b <= 19; b++) counts.push_back(b);
    counts.insert(counts.end(), {32, 64, 131});
    for (int blocks : counts) {
      const int64_t n = static_cast<int64_t>(blocks) * t.block_elems;
      for (int trial = 0; trial < 20; trial++) {
        const std::vector<uint8_t> w = random_weights(type, n, rng);
        const std::vector<uint8_t> a = random_activation(type, n, rng);
        const float s = order_dot(generic(type), o)(w.data(), a.data(), n);
        const float v = order_dot(k, o)(w.data(), a.data(), n);
        ASSERT_EQ(std::memcmp(&s, &v, 4), 0)
            << order_name(o) << ", blocks " << blocks << " trial " << trial << ": " << s << " vs " << v;
        ASSERT_EQ(dot(type, w.data(), a.data(), n, Isa{arch_under_test(), o}), v);
      }
    }
  }
}

// Multi-row kernels of both orders: every output has the generic single-row kernel's bits, for
// 1..19 activation rows (past two groups of 8) and padded rows.
TEST_P(SimdIdentityTest, MultiRowKernelMatchesSingleRow) {
  const Type type = GetParam();
  const Traits& t = traits(type);
  for (Order o : {Order::Fast, Order::Exact}) {
    const DotMultiFn multi = order_multi(simd(type), o);
    ASSERT_NE(multi, nullptr) << "no " << order_name(o) << " multi-row kernel on " << arch_name(arch_under_test());
    std::mt19937 rng(77 + static_cast<int>(type));
    for (int64_t n : {int64_t{3 * 256}, int64_t{21 * 256}}) {
      const size_t arb = act_row_bytes(t.vec_dot_type, n), stride = arb + 40;  // padded rows
      for (int n_act = 1; n_act <= 19; n_act++) {
        const std::vector<uint8_t> w = random_weights(type, n, rng);
        std::vector<uint8_t> acts(stride * static_cast<size_t>(n_act));
        for (int r = 0; r < n_act; r++) {
          const std::vector<uint8_t> a = random_activation(type, n, rng);
          std::memcpy(acts.data() + r * stride, a.data(), arb);
        }
        std::vector<float> out(static_cast<size_t>(n_act));
        multi(w.data(), acts.data(), stride, n_act, n, out.data());
        for (int r = 0; r < n_act; r++) {
          const float s = order_dot(generic(type), o)(w.data(), acts.data() + r * stride, n);
          ASSERT_EQ(std::memcmp(&s, &out[static_cast<size_t>(r)], 4), 0)
              << order_name(o) << ", n " << n << " n_act " << n_act << " row " << r;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(IntegerFormats, SimdIdentityTest,
                         ::testing::Values(Type::Q8_0, Type::Q2_K, Type::Q4_K, Type::IQ2_XXS, Type::MXFP4),
                         [](const auto& info) { return std::string(type_info(info.param).name); });

class FloatSimdTest : public SimdIdentityTest {};

// Both orders, single-row: every length 1..70 (every tail of 4-, 8- and 32-wide steps, rows
// shorter than eight blocks) and long rows with several blocks per Fast slice.
TEST_P(FloatSimdTest, DotsAreBitIdenticalToGeneric) {
  const Type type = GetParam();
  for (Order o : {Order::Fast, Order::Exact}) {
    const DotFn k = order_dot(simd(type), o), ref = order_dot(generic(type), o);
    ASSERT_NE(k, ref) << "no " << order_name(o) << " " << arch_name(arch_under_test()) << " kernel";
    std::mt19937 rng(5);
    std::vector<int64_t> lengths;
    for (int64_t n = 1; n <= 70; n++) lengths.push_back(n);
    lengths.insert(lengths.end(), {255, 256, 257, 1000, 4096, 7168});
    for (int64_t n : lengths) {
      for (int trial = 0; trial < 5; trial++) {
        const std::vector<uint8_t> w = random_weights(type, n, rng);
        std::vector<uint8_t> a = random_activation(type, n, rng);
        auto* x = reinterpret_cast<float*>(a.data());
        for (int64_t i = 0; i < n; i += 7) x[i] *= 1e4f;  // magnitudes apart: any reordered add shows
        const float s = ref(w.data(), a.data(), n), e = k(w.data(), a.data(), n);
        ASSERT_EQ(std::memcmp(&s, &e, 4), 0) << order_name(o) << ", n " << n << ": " << s << " vs " << e;
        ASSERT_EQ(dot(type, w.data(), a.data(), n, Isa{arch_under_test(), o}), e);
      }
    }
  }
}

// Multi-row float kernels of both orders: every output has the generic single-row kernel's bits,
// for 1..19 rows (past two groups of 8), lengths with every tail, padded rows, and inputs
// spanning magnitudes so that any reordered add changes some result.
TEST_P(FloatSimdTest, MultiRowKernelMatchesSingleRow) {
  const Type type = GetParam();
  for (Order o : {Order::Fast, Order::Exact}) {
    const DotMultiFn multi = order_multi(simd(type), o);
    if (multi == nullptr) continue;  // F32 has no exact-order multi-row kernel
    std::mt19937 rng(55 + static_cast<int>(type));
    for (int64_t n : {1, 7, 8, 13, 64, 203, 777}) {
      const size_t arb = act_row_bytes(Type::F32, n), stride = arb + 12;  // padded rows
      for (int n_act = 1; n_act <= 19; n_act++) {
        std::vector<uint8_t> w = random_weights(type, n, rng);
        std::vector<uint8_t> acts(stride * static_cast<size_t>(n_act));
        for (int r = 0; r < n_act; r++) {
          std::vector<uint8_t> a = random_activation(type, n, rng);
          auto* x = reinterpret_cast<float*>(a.data());
          for (int64_t i = 0; i < n; i += 5) x[i] *= 1e4f;
          std::memcpy(acts.data() + r * stride, a.data(), arb);
        }
        std::vector<float> out(static_cast<size_t>(n_act));
        multi(w.data(), acts.data(), stride, n_act, n, out.data());
        for (int r = 0; r < n_act; r++) {
          const float s = order_dot(generic(type), o)(w.data(), acts.data() + r * stride, n);
          ASSERT_EQ(std::memcmp(&s, &out[static_cast<size_t>(r)], 4), 0)
              << order_name(o) << ", n " << n << " n_act " << n_act << " row " << r << ": " << out[size_t(r)] << " vs "
              << s;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FloatFormats, FloatSimdTest, ::testing::Values(Type::F32, Type::F16, Type::BF16),
                         [](const auto& info) { return std::string(type_info(info.param).name); });

// Activation quantizers: the architecture's bytes against the generic ones, on heavy-tailed
// data and on the edge cases of the scale search (all zero, ties at .5 steps, the signed max
// appearing twice with opposite signs, -0, one huge value, NaN-free denormals).
class ActivationSimdTest : public SimdIdentityTest {};

TEST_P(ActivationSimdTest, QuantizerGivesTheGenericBytes) {
  const Type vdt = GetParam();
  const QuantizeFn q = simd(vdt).quantize_activation, ref = generic(vdt).quantize_activation;
  if (q == ref) GTEST_SKIP() << arch_name(arch_under_test()) << " uses the generic quantizer for this format";
  const int64_t blk = traits(vdt).block_elems == 1 ? 32 : traits(vdt).block_elems;
  std::mt19937 rng(31 + static_cast<int>(vdt));
  std::student_t_distribution<float> dist(3.0f);
  for (int trial = 0; trial < 40; trial++) {
    const int64_t n = blk * (1 + trial % 9);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    switch (trial % 8) {
      case 1: std::fill(x.begin(), x.begin() + blk, 0.0f); break;
      case 2:
        for (int64_t i = 0; i < n; i++) x[size_t(i)] = 0.5f * static_cast<float>(i % 7 - 3);
        break;
      case 3: x[3] = 9.0f, x[5] = -9.0f; break;
      case 4: x[0] = -0.0f, x[size_t(n - 1)] = 1e30f; break;
      case 5:
        for (float& v : x) v *= 1e-40f;
        break;
      case 6: x[size_t(n / 2)] = -7.0f, x[size_t(n / 2 + 1)] = 7.0f; break;
      default: break;
    }
    const size_t bytes = act_row_bytes(vdt, n);
    std::vector<uint8_t> a(bytes, 0xAB), b(bytes, 0xCD);
    ref(x.data(), a.data(), n);
    q(x.data(), b.data(), n);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), bytes), 0) << "trial " << trial << " n " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(ActivationFormats, ActivationSimdTest, ::testing::Values(Type::Q8_0, Type::Q8_K, Type::F32),
                         [](const auto& info) { return std::string(type_info(info.param).name); });

}  // namespace
}  // namespace ds4::quant
