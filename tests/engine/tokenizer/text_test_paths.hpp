#pragma once
// Where the text tests find the ds4-tiny reference vectors: $DS4D_DS4_VECTORS, else the shared/
// folder beside the checkout (compiled in by tests/text/CMakeLists.txt).
#include <cstdlib>
#include <string>

namespace ds4::text_tests {

inline std::string ds4_vectors_dir() {
  if (const char* env = std::getenv("DS4D_DS4_VECTORS"); env && *env) return env;
  return DS4D_DS4_VECTORS_DEFAULT;
}

}  // namespace ds4::text_tests

namespace ds4::text_tests {

// The forged tiny model, when the build defines one (tests/gguf's forged_tiny_model target).
inline std::string forged_tiny_model() {
#ifdef DS4D_FORGED_TINY_MODEL
  return DS4D_FORGED_TINY_MODEL;
#else
  return {};
#endif
}

}  // namespace ds4::text_tests
