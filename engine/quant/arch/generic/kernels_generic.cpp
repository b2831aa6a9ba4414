// The generic kernel set: the scalar reference dots of every weight format in both orders and the reference
// activation quantizers. Complete by construction -- every other set falls back to it.
#include "engine/quant/arch/generic/dots_generic.hpp"
#include "engine/quant/arch/kernel_set.hpp"
#include "engine/quant/formats.hpp"

namespace ds4::quant::detail {
namespace {

constexpr CpuKernels orders(DotFn fast, DotFn exact) { return {.dot = fast, .dot_exact = exact}; }

constexpr KernelRow kRows[] = {
    {Type::F32, {.dot = dot_f32_fast_generic, .dot_exact = dot_f32_generic, .quantize_activation = quantize_act_f32}},
    {Type::F16, orders(dot_f16_fast_generic, dot_f16_generic)},
    {Type::BF16, orders(dot_bf16_fast_generic, dot_bf16_generic)},
    {Type::Q8_0,
     {.dot = dot_q8_0_fast_generic, .dot_exact = dot_q8_0_generic, .quantize_activation = quantize_act_q8_0}},
    {Type::Q2_K, orders(dot_q2_k_fast_generic, dot_q2_k_generic)},
    {Type::Q4_K, orders(dot_q4_k_fast_generic, dot_q4_k_generic)},
    {Type::IQ2_XXS, orders(dot_iq2_xxs_fast_generic, dot_iq2_xxs_generic)},
    {Type::MXFP4, orders(dot_mxfp4_fast_generic, dot_mxfp4_generic)},
    {Type::Q8_K, {.quantize_activation = quantize_act_q8_k}},
};

constexpr KernelSet kGeneric{Arch::Generic, Arch::Generic, kRows};

}  // namespace

const KernelSet& generic_kernel_set() { return kGeneric; }

}  // namespace ds4::quant::detail
