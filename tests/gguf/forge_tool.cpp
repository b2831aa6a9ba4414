// Build-time forge: `gguf_forge_tool PRESET SEED OUT.gguf`. The same as `ds4ctl forge`, but
// linked with the forge alone, so the test model does not wait for (or break with) all of ds4ctl.
#include <cstdlib>
#include <exception>
#include <iostream>

#include "engine/gguf/forge/forge.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: gguf_forge_tool PRESET SEED OUT.gguf\n";
    return 2;
  }
  try {
    using namespace ds4::gguf::forge;
    ForgeSummary s = forge_model(forge_preset(argv[1]), std::strtoull(argv[2], nullptr, 10), argv[3]);
    std::cout << argv[3] << ": " << s.file_bytes << " bytes, " << s.decode_bytes_per_token << " bytes per token\n";
  } catch (const std::exception& e) {
    std::cerr << "gguf_forge_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
