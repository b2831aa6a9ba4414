// speculation.drafter at start-up; see drafter_check.hpp.
#include "daemon/drafter_check.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "config/drafter_spec.hpp"
#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/sidecar_binding.hpp"

namespace ds4::daemon {

void check_drafter(const config::Config& cfg) {
  const config::DrafterSpec spec = config::parse_drafter(cfg.speculation.drafter);
  if (spec.kind != config::DrafterKind::Mtp) return;  // none and ngram need no file
  const std::string what = "speculation.drafter " + config::drafter_name(spec) + ": ";
  std::error_code ec;
  if (!std::filesystem::exists(spec.path, ec)) throw std::runtime_error(what + "no such file");
  if (!std::filesystem::is_regular_file(spec.path, ec)) throw std::runtime_error(what + "not a regular file");
  try {
    (void)gguf::GgufFile::open(spec.path);
  } catch (const std::exception& e) {
    throw std::runtime_error(what + "not a GGUF file (" + e.what() + ")");
  }
  try {
    gguf::check_sidecar_binding(cfg.model.path, spec.path);
  } catch (const std::exception& e) {
    throw std::runtime_error(what + "does not belong to the model " + cfg.model.path + ": " + e.what());
  }
}

}  // namespace ds4::daemon
