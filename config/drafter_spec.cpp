// speculation.drafter spelling; see drafter_spec.hpp.
#include "config/drafter_spec.hpp"

#include <stdexcept>

namespace ds4::config {

DrafterSpec parse_drafter(const std::string& value) {
  DrafterSpec s;
  if (value.empty() || value == "none") return s;
  if (value == "ngram") {
    s.kind = DrafterKind::Ngram;
    return s;
  }
  const std::string mtp = "mtp:";
  if (value.rfind(mtp, 0) == 0) {
    s.kind = DrafterKind::Mtp;
    s.path = value.substr(mtp.size());
    if (s.path.empty()) throw std::invalid_argument("'mtp:' needs a file: mtp:/path/to/model.mtp.gguf");
    return s;
  }
  throw std::invalid_argument("'" + value + "' is not none, ngram or mtp:FILE (an MTP sidecar is written mtp:" + value +
                              ")");
}

std::string drafter_name(const DrafterSpec& spec) {
  switch (spec.kind) {
    case DrafterKind::Ngram: return "ngram";
    case DrafterKind::Mtp: return "mtp:" + spec.path;
    case DrafterKind::None: break;
  }
  return "none";
}

}  // namespace ds4::config
