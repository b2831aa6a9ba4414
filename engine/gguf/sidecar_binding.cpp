#include "engine/gguf/sidecar_binding.hpp"

#include <xxhash.h>

#include <cstdio>

#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/gguf_reader.hpp"

namespace ds4::gguf {

std::string mtp_base_digest(const GgufFile& main) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  for (const char* name : {"token_embd.weight", "output.weight"}) {
    const TensorInfo* t = main.find_tensor(name);
    if (!t) {
      XXH64_freeState(st);
      throw GgufError(main.path(), std::nullopt, std::string("has no ") + name + " (an MTP drafter's base needs it)");
    }
    const uint32_t type = static_cast<uint32_t>(t->type);
    XXH64_update(st, &type, sizeof type);
    for (uint64_t d : t->dims) XXH64_update(st, &d, sizeof d);
    const auto bytes = main.bytes(*t);
    XXH64_update(st, bytes.data(), bytes.size());
  }
  const unsigned long long h = XXH64_digest(st);
  XXH64_freeState(st);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", h);
  return buf;
}

void check_sidecar_binding(const std::string& main_gguf, const std::string& sidecar_gguf) {
  const GgufFile m = GgufFile::open(main_gguf);
  const GgufFile s = GgufFile::open(sidecar_gguf);
  if (s.get_or<std::string>("ds4d.convert.role", "") != "mtp")
    throw GgufError(sidecar_gguf, std::nullopt, "is not an MTP sidecar (ds4d.convert.role != mtp)");
  const std::string fp = "ds4d.convert.source_fingerprint", id = "ds4d.convert.artifact_id";
  if (s.has(kMtpBaseDigestKey)) {
    // A drafter trained or forged for this model: bound to the weights it shares.
    const std::string want = s.get<std::string>(kMtpBaseDigestKey), got = mtp_base_digest(m);
    if (want != got)
      throw GgufError(sidecar_gguf, std::nullopt,
                      "MTP sidecar made for other base weights: " + std::string(kMtpBaseDigestKey) + " " + want +
                          ", the main model's digest is " + got);
    return;
  }
  for (const GgufFile* f : {&m, &s})
    if (!f->has(fp) || !f->has(id))
      throw GgufError(
          f->path(), std::nullopt,
          "has no " + fp + " / " + id + " (not written by ds4ctl convert) and the sidecar has no " + kMtpBaseDigestKey);
  if (s.get<std::string>(fp) != m.get<std::string>(fp))
    throw GgufError(sidecar_gguf, std::nullopt,
                    "MTP sidecar from another source revision: fingerprint " + s.get<std::string>(fp) +
                        ", the main model's is " + m.get<std::string>(fp));
  if (s.get<std::string>(id) != m.get<std::string>(id))
    throw GgufError(sidecar_gguf, std::nullopt,
                    "MTP sidecar from another conversion: artifact " + s.get<std::string>(id) + ", the main model is " +
                        m.get<std::string>(id));
}

}  // namespace ds4::gguf
