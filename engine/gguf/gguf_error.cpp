#include "engine/gguf/gguf_error.hpp"

namespace ds4::gguf {
namespace {
std::string compose(const std::string& path, std::optional<uint64_t> offset, const std::string& msg) {
  std::string s;
  if (!path.empty()) s += path + ": ";
  if (offset) s += "at byte " + std::to_string(*offset) + ": ";
  return s + msg;
}
}  // namespace

GgufError::GgufError(std::string path, std::optional<uint64_t> offset, const std::string& message)
    : std::runtime_error(compose(path, offset, message)), path_(std::move(path)), offset_(offset), detail_(message) {}

}  // namespace ds4::gguf
