#pragma once
// The one exception type of the GGUF layer. A malformed or inconsistent file is an input error,
// not a bug: every check in the reader, the writer and the DS4 layout catalogue throws GgufError
// carrying the file it was reading and, where one applies, the byte offset of the offending
// field, so the message a user sees says exactly where the file went wrong.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace ds4::gguf {

class GgufError : public std::runtime_error {
 public:
  // what() reads "<path>: at byte <offset>: <message>" (the offset part only when known).
  GgufError(std::string path, std::optional<uint64_t> offset, const std::string& message);

  const std::string& path() const noexcept { return path_; }
  std::optional<uint64_t> offset() const noexcept { return offset_; }
  // The message without the path and offset prefix.
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string path_;
  std::optional<uint64_t> offset_;
  std::string detail_;
};

}  // namespace ds4::gguf
