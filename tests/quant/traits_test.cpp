// The traits table agrees with quant_type.hpp's geometry, has a kernel wherever it should, and
// dispatch picks the kernel each Isa names.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {

constexpr Type kAll[] = {Type::F32,  Type::F16,     Type::BF16,  Type::Q8_0, Type::Q8_K,
                         Type::Q2_K, Type::Q4_K,    Type::IQ2_XXS, Type::MXFP4, Type::I32};

TEST(Traits, GeometryMatchesTypeInfo) {
  for (Type t : kAll) {
    const Traits& tr = traits(t);
    EXPECT_EQ(tr.type, t);
    EXPECT_EQ(tr.block_elems, type_info(t).block_elems) << type_info(t).name;
    EXPECT_EQ(tr.block_bytes, type_info(t).block_bytes) << type_info(t).name;
  }
}

TEST(Traits, KernelsPresentWhereExpected) {
  for (Type t : kAll) {
    const Traits& tr = traits(t);
    const bool weight = t != Type::Q8_K && t != Type::I32;
    EXPECT_EQ(tr.dot_scalar != nullptr, weight) << type_info(t).name;
    EXPECT_EQ(tr.dot_avx2 != nullptr, weight) << type_info(t).name;
    EXPECT_EQ(tr.dot_avx2_exact != nullptr, weight) << type_info(t).name;
    EXPECT_EQ(tr.dequantize != nullptr, t != Type::I32) << type_info(t).name;
    EXPECT_EQ(tr.quantize != nullptr, t != Type::I32) << type_info(t).name;
    if (weight) {
      EXPECT_NE(traits(tr.vec_dot_type).quantize_activation, nullptr) << type_info(t).name;
    }
  }
}

TEST(Traits, DispatchFollowsIsa) {
  const Traits& f16 = traits(Type::F16);
  EXPECT_EQ(dot_fn(f16, Isa::Scalar), f16.dot_scalar);
  EXPECT_EQ(dot_fn(f16, Isa::Avx2), f16.dot_avx2);
  EXPECT_EQ(dot_fn(f16, Isa::Avx2Exact), f16.dot_avx2_exact);
  const Traits& q8k = traits(Type::Q8_K);
  EXPECT_EQ(dot_fn(q8k, Isa::Avx2), nullptr);
  EXPECT_EQ(exact_isa() == Isa::Avx2Exact, best_isa() == Isa::Avx2);
  const char* env = std::getenv("DS4D_ISA");
  if (env != nullptr && std::string(env) == "scalar") {
    EXPECT_EQ(best_isa(), Isa::Scalar);
  }
}

}  // namespace
}  // namespace ds4::quant
