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
