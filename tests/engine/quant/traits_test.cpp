// The traits table agrees with quant_type.hpp's geometry, every architecture has a kernel
// wherever it should, and dispatch picks the kernel each Isa names.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {

constexpr Type kAll[] = {Type::F32,  Type::F16,  Type::BF16,    Type::Q8_0,  Type::Q8_K,
                         Type::Q2_K, Type::Q4_K, Type::IQ2_XXS, Type::MXFP4, Type::I32};

TEST(Traits, GeometryMatchesTypeInfo) {
  for (Type t : kAll) {
    const Traits& tr = traits(t);
    EXPECT_EQ(tr.type, t);
    EXPECT_EQ(tr.block_elems, type_info(t).block_elems) << type_info(t).name;
    EXPECT_EQ(tr.block_bytes, type_info(t).block_bytes) << type_info(t).name;
  }
}

TEST(Traits, IndexedByTypeWithBlockSizesFromTheStructs) {
  EXPECT_EQ(traits(Type::Q2_K).block_bytes, 84u);
  EXPECT_EQ(traits(Type::Q8_K).act_block_bytes, 292u);
  EXPECT_EQ(traits(Type::Q8_0).act_block_bytes, 36u);
  EXPECT_THROW(traits(static_cast<Type>(2)), std::invalid_argument);     // Q4_1: not a DS4 format
  EXPECT_THROW(traits(static_cast<Type>(4000)), std::invalid_argument);  // past the table
}

TEST(Traits, KernelsPresentWhereExpected) {
  for (Isa isa : supported_isas()) {
    for (Type t : kAll) {
      const Traits& tr = traits(t);
      const CpuKernels& k = cpu_kernels(t, isa.arch);
      const bool weight = t != Type::Q8_K && t != Type::I32;
      EXPECT_EQ(tr.has_dot, weight) << type_info(t).name;
      EXPECT_EQ(k.dot != nullptr, weight) << type_info(t).name << " " << isa_name(isa);
      EXPECT_EQ(k.dot_exact != nullptr, weight) << type_info(t).name << " " << isa_name(isa);
      EXPECT_EQ(tr.dequantize != nullptr, t != Type::I32) << type_info(t).name;
      EXPECT_EQ(tr.quantize != nullptr, t != Type::I32) << type_info(t).name;
      EXPECT_EQ(k.quantize_activation != nullptr, tr.quantize_activation != nullptr) << type_info(t).name;
      if (weight) {
        EXPECT_NE(traits(tr.vec_dot_type).quantize_activation, nullptr) << type_info(t).name;
      }
    }
  }
}

TEST(Traits, DispatchFollowsIsa) {
  const Traits& f16 = traits(Type::F16);
  const CpuKernels& g = cpu_kernels(Type::F16, Arch::Generic);
  EXPECT_EQ(dot_fn(f16, Isa::Scalar), g.dot_exact);
  EXPECT_EQ(dot_fn(f16, Isa{Arch::Generic, Order::Fast}), g.dot);
  for (Isa isa : supported_isas()) {
    const CpuKernels& k = cpu_kernels(Type::F16, isa.arch);
    EXPECT_EQ(dot_fn(f16, isa), isa.order == Order::Exact ? k.dot_exact : k.dot) << isa_name(isa);
    EXPECT_EQ(dot_multi_fn(f16, isa), isa.order == Order::Exact ? k.dot_multi : k.dot_multi_fast) << isa_name(isa);
  }
  EXPECT_EQ(dot_fn(traits(Type::Q8_K), best_isa()), nullptr);
  EXPECT_EQ(exact_isa().arch, best_isa().arch);
  EXPECT_EQ(exact_isa().order, Order::Exact);
  const char* env = std::getenv("DS4D_ISA");
  if (env != nullptr && std::string(env) == "scalar") {
    EXPECT_EQ(best_isa().arch, Arch::Generic);
  }
  // The arm64 suites (tests/arm64) run under emulated CPUs with and without dotprod; this makes
  // sure the kernels they meant to test are the ones chosen.
  if (const char* want = std::getenv("DS4D_EXPECT_ISA")) {
    EXPECT_STREQ(isa_name(best_isa()), want);
  }
}

// What an architecture lacks falls back to its parent, down to the generic kernels; the build's
// own architecture is found on a CPU that has it.
TEST(Traits, MissingKernelsFallBackAndTheTargetArchIsDetected) {
  for (Type t : kAll) {
    const CpuKernels& g = cpu_kernels(t, Arch::Generic);
    if (traits(t).has_dot) {
      EXPECT_NE(g.dot, g.dot_exact) << "the generic set has both orders";
    }
    EXPECT_EQ(g.dot_multi, nullptr);
    EXPECT_EQ(g.dot_multi_fast, nullptr);
  }
  // The Q8_K entry has no dot anywhere, but its activation quantizer is always there.
  for (Isa isa : supported_isas()) EXPECT_NE(cpu_kernels(Type::Q8_K, isa.arch).quantize_activation, nullptr);
#if defined(__aarch64__)
  EXPECT_TRUE(arch_supported(Arch::Neon)) << "AdvSIMD is part of every AArch64 CPU";
  EXPECT_FALSE(arch_supported(Arch::Avx2));
  EXPECT_THROW(cpu_kernels(Type::Q8_0, Arch::Avx2), std::invalid_argument);
  if (arch_supported(Arch::NeonDotprod)) {
    // The dotprod set only replaces the SDOT-able kernels; the float ones are NEON's.
    EXPECT_EQ(cpu_kernels(Type::F16, Arch::NeonDotprod).dot_exact, cpu_kernels(Type::F16, Arch::Neon).dot_exact);
    EXPECT_NE(cpu_kernels(Type::Q8_0, Arch::NeonDotprod).dot_exact, cpu_kernels(Type::Q8_0, Arch::Neon).dot_exact);
  }
#elif defined(__x86_64__)
  EXPECT_FALSE(arch_supported(Arch::Neon));
  EXPECT_THROW(cpu_kernels(Type::Q8_0, Arch::Neon), std::invalid_argument);
#endif
}

}  // namespace
}  // namespace ds4::quant
