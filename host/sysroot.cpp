// Path mapping under a root prefix; see sysroot.hpp.
#include "host/sysroot.hpp"

#include <stdexcept>

namespace ds4::host {

Sysroot::Sysroot(std::string prefix) : prefix_(std::move(prefix)) {
  while (prefix_.size() > 1 && prefix_.back() == '/') prefix_.pop_back();
  if (prefix_ == "/") prefix_.clear();
}

std::string Sysroot::path(std::string_view absolute) const {
  if (absolute.empty() || absolute.front() != '/')
    throw std::invalid_argument("sysroot: not an absolute path: '" + std::string(absolute) + "'");
  return prefix_ + std::string(absolute);
}

}  // namespace ds4::host
