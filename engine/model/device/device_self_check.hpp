#pragma once
// The device's first answer checked before it serves (docs/cuda.md §selection): a short prefill
// (the GEMM path) and a decode (the matvec path) of fixed tokens through the device forward and
// the CPU's Fast forward of the same loaded model, logits compared bit for bit. A device whose
// kernels compute other bits than the CPU on this hardware (a driver, a compiler, a kernel
// defect) is caught at startup instead of silently changing answers.
#include <string>

#include "engine/model/model.hpp"

namespace ds4::model::device {

// m must be loaded for the device (LoadOptions::device Cuda). Returns "" when every logit of
// both steps matched, else what differed first ("prefill logit 17 of 129280: device x, CPU y").
// Throws std::runtime_error from the driver. Costs one short CPU prefill (about a second of the
// CPU on DS4 Flash) and two small contexts on each side, freed on return.
std::string self_check(const Model& m);

// Tokens in the check: the prefill's (more than the matvec widths, so the GEMM runs) plus one.
constexpr int kSelfCheckPrefill = 12;

}  // namespace ds4::model::device
