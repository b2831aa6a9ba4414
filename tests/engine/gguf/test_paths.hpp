#pragma once
// Where the gguf tests find their inputs: the shared ds4-tiny vectors (env DS4D_DS4_VECTORS
// overrides the configured default) and the build-time forged model.
#include <cstdlib>
#include <string>

namespace ds4::gguf::test {

inline std::string ds4_tiny_dir() {
  if (const char* e = std::getenv("DS4D_DS4_VECTORS")) return e;
  return DS4D_DS4_VECTORS_DEFAULT;
}
inline std::string ds4_tiny_model() { return ds4_tiny_dir() + "/model.gguf"; }
inline std::string forged_tiny_model() { return DS4D_FORGED_TINY_MODEL; }
#ifdef DS4D_DS4CTL_BINARY  // only the ds4ctl tests run the binary
inline std::string ds4ctl_binary() { return DS4D_DS4CTL_BINARY; }
#endif

}  // namespace ds4::gguf::test
