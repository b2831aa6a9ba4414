#pragma once
// The model ds4ctl commands use when -m is not given: the packaged default
// (/usr/share/ds4d/models/ds4-tiny-agent.gguf) when installed, else the copy in this build tree
// (models/ds4-tiny-agent.gguf, the embedded agent model, see models/CMakeLists.txt).
#include <filesystem>
#include <string>

namespace ds4ctl {

inline std::string default_model_path() {
  const std::string installed = "/usr/share/ds4d/models/ds4-tiny-agent.gguf";
  if (std::filesystem::exists(installed)) return installed;
#ifdef DS4D_BUILD_DEFAULT_MODEL
  return DS4D_BUILD_DEFAULT_MODEL;
#else
  return installed;
#endif
}

}  // namespace ds4ctl
