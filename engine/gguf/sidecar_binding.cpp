#include "engine/gguf/sidecar_binding.hpp"

#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/gguf_reader.hpp"

namespace ds4::gguf {

void check_sidecar_binding(const std::string& main_gguf, const std::string& sidecar_gguf) {
  const GgufFile m = GgufFile::open(main_gguf);
  const GgufFile s = GgufFile::open(sidecar_gguf);
  const std::string fp = "ds4d.convert.source_fingerprint", id = "ds4d.convert.artifact_id";
  for (const GgufFile* f : {&m, &s})
    if (!f->has(fp) || !f->has(id))
      throw GgufError(f->path(), std::nullopt, "has no " + fp + " / " + id + " (not written by ds4ctl convert)");
  if (s.get<std::string>(fp) != m.get<std::string>(fp))
    throw GgufError(sidecar_gguf, std::nullopt,
                    "MTP sidecar from another source revision: fingerprint " + s.get<std::string>(fp) +
                        ", the main model's is " + m.get<std::string>(fp));
  if (s.get<std::string>(id) != m.get<std::string>(id))
    throw GgufError(sidecar_gguf, std::nullopt,
                    "MTP sidecar from another conversion: artifact " + s.get<std::string>(id) + ", the main model is " +
                        m.get<std::string>(id));
  if (s.get_or<std::string>("ds4d.convert.role", "") != "mtp")
    throw GgufError(sidecar_gguf, std::nullopt, "is not an MTP sidecar (ds4d.convert.role != mtp)");
}

}  // namespace ds4::gguf
