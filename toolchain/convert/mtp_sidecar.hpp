#pragma once
// The MTP / drafter sidecar: the official checkpoint's "mtp.0.*" tensors (one extra block plus
// e_proj/h_proj/enorm/hnorm/norm and an HC head, docs/model.md §official-checkpoint-names)
// go to a separate GGUF next to the main one, OUT.mtp.gguf, converted with the same recipe.
// It has no embedding or LM head of its own (it reuses the main file's), so it is only valid
// with the main file of the same source revision: both carry ds4d.convert.source_fingerprint
// and the sidecar carries the main file's ds4d.convert.artifact_id; verify_sidecar() rejects a
// sidecar from another revision or another conversion.
#include <string>
#include <vector>

#include "engine/gguf/ds4_layout.hpp"
#include "engine/gguf/gguf_reader.hpp"

namespace ds4::convert {

// GGUF tensors of the MTP file ("mtp.0.*"), in file order. Layer id is n_layer (the block
// after the last), so per-layer recipe checks (gate == up) apply to it as to any layer.
std::vector<gguf::TensorRule> mtp_catalogue(const gguf::Ds4Dims& d);
// HF name of an MTP rule ("mtp.0.e_proj.weight", "mtp.0.attn.wq_a.weight", ...); experts go
// through official_expert_name.
std::string mtp_official_name(const gguf::TensorRule& rule);
// OUT.gguf -> OUT.mtp.gguf
std::string sidecar_path_for(const std::string& output);

// Throws ConvertError naming the sidecar when it is not bound to `main_gguf` (different source
// fingerprint or artifact id, or missing keys): gguf::check_sidecar_binding, which ds4d uses.
void verify_sidecar(const std::string& main_gguf, const std::string& sidecar_gguf);

// Whether `f` is an MTP sidecar: ds4d.convert.role is "mtp" or a tensor is named "mtp.0.*".
bool is_mtp_sidecar(const gguf::GgufFile& f);
// Checks a sidecar against mtp_catalogue of its own deepseek4.* metadata: every tensor present
// with its shape and an allowed type, gate and up experts of one type, nothing else. One message
// per violation (empty: the engine can load it). Never throws.
std::vector<std::string> check_mtp_layout(const gguf::GgufFile& f);
// Throws ConvertError naming the sidecar, the base and the key when a deepseek4.* key of the
// sidecar is missing from the base or holds another value there (a drafter works only with
// the model whose dims it was made for).
void check_same_dims(const gguf::GgufFile& sidecar, const gguf::GgufFile& base);

}  // namespace ds4::convert
