#pragma once
// Whether an MTP sidecar GGUF belongs to a main GGUF. Two bindings exist
// (docs/speculation.md §sidecar-binding): the converter writes the two files together
// (toolchain/convert/mtp_sidecar.hpp), both carrying ds4d.convert.source_fingerprint and the sidecar the main file's
// ds4d.convert.artifact_id; a drafter trained or forged for a model that was not converted
// (the embedded model, forged test models) carries ds4d.mtp.base_digest, a digest of the main
// file's tensors the drafter reuses. Both carry ds4d.convert.role = "mtp". The check lives in the
// engine because the daemon makes it before serving a drafter, and ds4d links nothing of the
// offline toolchain.
#include <string>

namespace ds4::gguf {

class GgufFile;

inline constexpr const char* kMtpBaseDigestKey = "ds4d.mtp.base_digest";

// 16 lowercase hex digits: XXH64 (seed 0) over token_embd.weight and output.weight, the tensors
// an MTP block shares with its base: each one's type, dims and data. Throws GgufError naming the
// file when one is missing.
std::string mtp_base_digest(const GgufFile& main);

// Throws GgufError naming the file at fault when `sidecar_gguf` is not bound to `main_gguf`
// (missing keys, another source revision, another conversion, other base weights, not an MTP
// sidecar).
void check_sidecar_binding(const std::string& main_gguf, const std::string& sidecar_gguf);

}  // namespace ds4::gguf
