#pragma once
// The conversion audit, written next to the output: OUT.audit.json (machine-readable) and
// OUT.audit.txt (a table for people). It lists every target tensor (sources, type, shape,
// layer, sampled relative RMSE and max |error| of the dequantized target against the exact
// decoded source values), every source tensor that has no target with its reason, the error
// summary per target type, the invariants, the source fingerprint and the artifact id.
#include <string>

#include "toolchain/convert/converter.hpp"

namespace ds4::convert {

// Writes both files; returns the JSON path. Throws ConvertError on I/O failure.
std::string write_audit(const ConvertResult& r);

}  // namespace ds4::convert
