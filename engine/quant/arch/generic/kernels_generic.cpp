// The generic kernel set: the scalar reference dot of every weight format and the reference
// activation quantizers. Complete by construction -- every other set falls back to it.
#include "engine/quant/arch/generic/dots_generic.hpp"
#include "engine/quant/arch/kernel_set.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

constexpr CpuKernels both(DotFn f) { return {.dot = f, .dot_exact = f}; }

constexpr KernelRow kRows[] = {
    {Type::F32, {.dot = dot_f32_generic, .dot_exact = dot_f32_generic, .quantize_activation = quantize_act_f32}},
    {Type::F16, both(dot_f16_generic)},
    {Type::BF16, both(dot_bf16_generic)},
    {Type::Q8_0, {.dot = dot_q8_0_generic, .dot_exact = dot_q8_0_generic, .quantize_activation = quantize_act_q8_0}},
    {Type::Q2_K, both(dot_q2_k_generic)},
    {Type::Q4_K, both(dot_q4_k_generic)},
    {Type::IQ2_XXS, both(dot_iq2_xxs_generic)},
    {Type::MXFP4, both(dot_mxfp4_generic)},
    {Type::Q8_K, {.quantize_activation = quantize_act_q8_k}},
};

constexpr KernelSet kGeneric{Arch::Generic, Arch::Generic, kRows};

}  // namespace

const KernelSet& generic_kernel_set() { return kGeneric; }

}  // namespace ds4::quant::detail
