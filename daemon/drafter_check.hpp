#pragma once
// The daemon's start-up check of speculation.drafter (docs/speculation.md §configuration): a
// drafter that cannot be used is a configuration error naming the file and the reason, never a
// silent fallback to no speculation.
#include "config/config.hpp"

namespace ds4::daemon {

// Throws std::runtime_error "speculation.drafter mtp:FILE: <reason>" when the drafter cannot
// be used with cfg.model.path: a missing file, not a GGUF, a sidecar of another model or
// conversion (convert::verify_sidecar), or an MTP drafter while its forward pass is not built.
void check_drafter(const config::Config& cfg);

}  // namespace ds4::daemon
