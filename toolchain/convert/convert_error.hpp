#pragma once
// The converter's one exception type. Every problem with a source checkpoint, a recipe or an
// output names the file and, where one is involved, the tensor: "<file>: tensor '<name>': <what>".
#include <stdexcept>
#include <string>

namespace ds4::convert {

class ConvertError : public std::runtime_error {
 public:
  ConvertError(const std::string& file, const std::string& tensor, const std::string& what)
      : std::runtime_error(compose(file, tensor, what)), file_(file), tensor_(tensor) {}

  const std::string& file() const noexcept { return file_; }
  const std::string& tensor() const noexcept { return tensor_; }

 private:
  static std::string compose(const std::string& file, const std::string& tensor, const std::string& what) {
    std::string s = file.empty() ? std::string() : file + ": ";
    if (!tensor.empty()) s += "tensor '" + tensor + "': ";
    return s + what;
  }
  std::string file_, tensor_;
};

}  // namespace ds4::convert
