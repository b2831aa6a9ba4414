#pragma once
// Whether an MTP sidecar GGUF belongs to a main GGUF. The converter writes the two together
// (toolchain/convert/mtp_sidecar.hpp): both carry ds4d.convert.source_fingerprint, and the
// sidecar carries the main file's ds4d.convert.artifact_id and ds4d.convert.role = "mtp". The
// check lives in the engine because the daemon makes it before serving a drafter, and ds4d links
// nothing of the offline toolchain.
#include <string>

namespace ds4::gguf {

// Throws GgufError naming the file at fault when `sidecar_gguf` is not bound to `main_gguf`
// (missing keys, another source revision, another conversion, not an MTP sidecar).
void check_sidecar_binding(const std::string& main_gguf, const std::string& sidecar_gguf);

}  // namespace ds4::gguf
